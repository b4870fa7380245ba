package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

type countingSource struct {
	reads   int
	clients map[string]store.Client
}

func (s *countingSource) GetClient(_ context.Context, id string) (store.Client, error) {
	s.reads++
	c, ok := s.clients[id]
	if !ok {
		return c, store.ErrNotFound
	}
	return c, nil
}

func TestCache(t *testing.T) {
	src := &countingSource{clients: map[string]store.Client{"a": {ID: "a", Name: "A"}}}
	now := time.Now()
	cc := &Cache{Source: src, TTL: 5 * time.Second, Now: func() time.Time { return now }}
	ctx := context.Background()
	for range 3 {
		if c, err := cc.GetClient(ctx, "a"); err != nil || c.Name != "A" {
			t.Fatalf("%+v %v", c, err)
		}
	}
	if src.reads != 1 {
		t.Errorf("%d store reads for 3 lookups within the TTL, want 1", src.reads)
	}
	src.clients["a"] = store.Client{ID: "a", Name: "A2"}
	now = now.Add(5 * time.Second)
	if c, _ := cc.GetClient(ctx, "a"); c.Name != "A2" || src.reads != 2 {
		t.Errorf("after the TTL: %+v, %d reads", c, src.reads)
	}
	for range 2 {
		if _, err := cc.GetClient(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown: %v", err)
		}
	}
	if src.reads != 4 || len(cc.entries) != 1 {
		t.Errorf("unknown ids are cached: %d reads, %d entries", src.reads, len(cc.entries))
	}
	cc.Forget()
	if _, _ = cc.GetClient(ctx, "a"); src.reads != 5 {
		t.Errorf("Forget kept the entry: %d reads", src.reads)
	}
}
