package signing

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSign is the cost of signing an ID-token-sized set of claims
// with each algorithm (the key read and opened once, as in a server).
// BenchmarkVerify is the cost of checking one.
func BenchmarkSign(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(alg, func(b *testing.B) {
			k, payload := benchKeys(b, alg)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Sign(ctx, payload, "JWT"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(alg, func(b *testing.B) {
			k, payload := benchKeys(b, alg)
			ctx := context.Background()
			tok, err := k.Sign(ctx, payload, "JWT")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Verify(ctx, tok, "JWT"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchKeys(b *testing.B, alg string) (*Keys, []byte) {
	c := newClock()
	cfg := testConfig(alg)
	cfg.Refresh = time.Hour // the clock stands still: one read of the store
	k := newKeys(b, sqliteStore(b), c, cfg)
	if err := k.EnsureKeys(context.Background()); err != nil {
		b.Fatal(err)
	}
	now := c.Now()
	payload := []byte(`{"iss":"https://login.example.com","sub":"6f1c2a9e-3b7d-4e58-9a40-2d8c5b1e7f03",` +
		`"aud":"web-app","nonce":"n-0S6_WzA2Mj","auth_time":` + itoa(now.Unix()) + `,"iat":` + itoa(now.Unix()) +
		`,"exp":` + itoa(now.Add(time.Hour).Unix()) + `,"amr":["pwd"],"acr":"1"}`)
	return k, payload
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
