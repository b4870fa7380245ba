package main

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

const importCrashConfig = `
api_users:
  - username: importer
    password: "importer-password"
`

func crashRef(request, i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", request, i) }

// importBody is n complete persons: profile, phone, PBKDF2 hash and a linked identity.
func importBody(t *testing.T, request, n int) []byte {
	t.Helper()
	salt := []byte("salt")
	digest, err := pbkdf2.Key(sha256.New, "pw", salt, 1000, 32)
	if err != nil {
		t.Fatal(err)
	}
	hp := map[string]any{"digest": base64.StdEncoding.EncodeToString(digest), "salt": base64.StdEncoding.EncodeToString(salt), "nr_of_iterations": 1000}
	persons := make([]any, n)
	for i := range persons {
		ref := crashRef(request, i)
		persons[i] = map[string]any{"status": "ACTIVATED", "hashed_password": hp,
			"profile": map[string]any{"reference_id": ref, "name": map[string]any{"first_name": "F", "last_name": "L"},
				"email_addresses": []any{map[string]any{"value": ref + "@example.com", "primary": true}},
				"phone_numbers":   []any{map[string]any{"value": "+31612345678", "primary": true}}},
			"identities": map[string]any{"idp_id": identity.PasswordIdPID, "external_person_id": "ext-" + ref}}
	}
	b, _ := json.Marshal(map[string]any{"persons": persons})
	return b
}

// complete checks that a stored person has every part of what was sent.
func complete(ctx context.Context, st store.Store, ref string) (exists bool, err error) {
	p, err := st.GetPerson(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ids, err := st.ListIdentities(ctx, ref)
	if err != nil {
		return true, err
	}
	if p.PasswordHash == "" || p.FirstName != "F" || len(p.Profile.Phones) != 1 || len(ids) != 1 {
		return true, fmt.Errorf("person %s is half-written: hash %t, name %q, phones %d, identities %d",
			ref, p.PasswordHash != "", p.FirstName, len(p.Profile.Phones), len(ids))
	}
	return true, nil
}

// TestImportSurvivesSIGKILL: the server is killed while it imports 10,000
// persons (after the first batches committed). After a restart every
// person of an answered request's successful_reference_ids is there, and
// every person that is there is whole.
func TestImportSurvivesSIGKILL(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			s := setupServe(t, backend, importCrashConfig, "warn")
			addr := s.addr
			openStore := func() store.Store {
				var st store.Store
				var err error
				if backend == "postgres" {
					st, err = postgres.Open(ctx, s.database)
				} else {
					st, err = sqlite.OpenReadOnly(ctx, strings.TrimPrefix(s.database, "sqlite:")) // beside the server
				}
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			cmd := command(t, s.env, "serve", "--config", s.cfgPath)
			startServing(t, cmd, addr)

			post := func(body []byte) ([]string, error) {
				req, _ := http.NewRequest("POST", "http://"+addr+"/api/import/persons", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth("importer", "importer-password")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return nil, err
				}
				defer resp.Body.Close()
				var res struct {
					Successful []string `json:"successful_reference_ids"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
					return nil, err
				}
				return res.Successful, nil
			}

			var mu sync.Mutex
			var answered []string
			lastSmall := 1
			// Small requests before and during the big one.
			small := func(request int) {
				ids, err := post(importBody(t, request, 50))
				if err == nil {
					mu.Lock()
					answered = append(answered, ids...)
					mu.Unlock()
				}
			}
			small(1)
			bigBody := importBody(t, 2, 10_000)
			bigDone := make(chan error, 1)
			go func() {
				ids, err := post(bigBody)
				if err == nil {
					mu.Lock()
					answered = append(answered, ids...)
					mu.Unlock()
				}
				bigDone <- err
			}()
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 3; ; r++ {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					lastSmall = r
					mu.Unlock()
					small(r)
				}
			}()

			// Kill once the big import's first batch is committed.
			watch := openStore()
			deadline := time.Now().Add(60 * time.Second)
			for {
				if ok, _ := complete(ctx, watch, crashRef(2, 0)); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the big import's first batch never committed")
				}
				time.Sleep(5 * time.Millisecond)
			}
			watch.Close()
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			close(stop)
			wg.Wait()
			bigErr := <-bigDone

			cmd = command(t, s.env, "serve", "--config", s.cfgPath)
			startServing(t, cmd, addr)
			defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()

			st := openStore()
			defer st.Close()
			for _, ref := range answered {
				if ok, err := complete(ctx, st, ref); !ok || err != nil {
					t.Errorf("answered as imported, after restart: exists %t, %v", ok, err)
				}
			}
			landed := 0
			for i := range 10_000 {
				ok, err := complete(ctx, st, crashRef(2, i))
				if err != nil {
					t.Error(err)
				}
				if ok {
					landed++
				}
			}
			for r := 1; r <= lastSmall; r++ { // the small requests, answered or cut off
				if r == 2 {
					continue
				}
				for i := range 50 {
					if _, err := complete(ctx, st, crashRef(r, i)); err != nil {
						t.Error(err)
					}
				}
			}
			if bigErr == nil {
				t.Logf("the big request was answered before the kill")
			}
			t.Logf("%s: %d persons of answered requests all found; %d of the 10,000 of the killed request landed, each whole (batches of 200)",
				backend, len(answered), landed)
		})
	}
}
