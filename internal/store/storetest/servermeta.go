package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

func testServerKeys(t *testing.T, s store.Store) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	if err := s.ClaimServerKey(ctx(), k1); err != nil {
		t.Fatalf("first claim on a fresh store: %v", err)
	}
	if err := s.ClaimServerKey(ctx(), k1); err != nil {
		t.Errorf("claim again with the recorded fingerprint: %v, want nil", err)
	}
	if err := s.ClaimServerKey(ctx(), k2); !errors.Is(err, store.ErrServerKeyMismatch) {
		t.Errorf("claim with another fingerprint: %v, want ErrServerKeyMismatch", err)
	}
	// A fingerprint that merely starts like the recorded one is another one.
	if err := s.ClaimServerKey(ctx(), k1[:16]); !errors.Is(err, store.ErrServerKeyMismatch) {
		t.Errorf("claim with a prefix of the fingerprint: %v, want ErrServerKeyMismatch", err)
	}
	if err := s.ClaimServerKey(ctx(), k1); err != nil {
		t.Errorf("a refused claim replaced the recorded fingerprint: %v", err)
	}
	err := s.Tx(ctx(), func(tx store.Store) error { return tx.ClaimServerKey(ctx(), k2) })
	if !errors.Is(err, store.ErrServerKeyMismatch) {
		t.Errorf("claim with another fingerprint in a transaction: %v, want ErrServerKeyMismatch", err)
	}
}

// testServerKeyRace: instances with two different keys starting at once on
// a fresh database; exactly one key is recorded, and every claim of the
// other is refused.
func testServerKeyRace(t *testing.T, s store.Store) {
	fps := [][]byte{bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)}
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := make([]int, len(fps))
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.ClaimServerKey(ctx(), fps[i%2])
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins[i%2]++
			case errors.Is(err, store.ErrServerKeyMismatch):
			default:
				t.Errorf("claim %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if !(wins[0] == n/2 && wins[1] == 0 || wins[0] == 0 && wins[1] == n/2) {
		t.Fatalf("claims that succeeded per fingerprint: %v; want all %d of one and none of the other", wins, n/2)
	}
	winner := 0
	if wins[1] > 0 {
		winner = 1
	}
	if err := s.ClaimServerKey(ctx(), fps[1-winner]); !errors.Is(err, store.ErrServerKeyMismatch) {
		t.Errorf("after the race the loser's claim: %v, want ErrServerKeyMismatch", err)
	}
}
