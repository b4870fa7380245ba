// Package pgtest gives tests a throwaway PostgreSQL database.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver
)

// DefaultURL is the development and CI server (trust auth, database test).
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL is the admin connection: $LATCHKEY_TEST_POSTGRES or DefaultURL.
func URL() string {
	if u := os.Getenv("LATCHKEY_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultURL
}

// NewDatabase creates a database for this test, drops it when the test ends,
// and returns its URL. Without a reachable server it skips the test — except
// with CI=true, where it fails: CI must never pass by skipping PostgreSQL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin, err := sql.Open("pgx", URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s is unreachable and CI=true: %v", redacted(URL()), err)
		}
		t.Skipf("PostgreSQL at %s is unreachable (set LATCHKEY_TEST_POSTGRES): %v", redacted(URL()), err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "latchkey_test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
		admin.Close()
	})
	u, err := url.Parse(URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func redacted(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
