package sqlstore

import (
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

// Concurrent readers of one token each put it: the grant's index names it
// once, so the grant's other tokens, and the token itself under a newer
// generation, are still cached after more puts than a grant may hold.
func TestTokenCacheCountsATokenPutManyTimesOnce(t *testing.T) {
	c := NewTokenCache()
	g := store.Grant{ID: "g1"}
	put := func(hash string, gen int64) {
		t.Helper()
		tk := store.Token{Hash: []byte(hash), Kind: store.KindAccess, GrantID: g.ID}
		_, _, seq := c.get(tk.Hash)
		c.put(seq, gen, tk, g)
		if e, ok, _ := c.get(tk.Hash); !ok || e.gen != gen {
			t.Fatalf("%s put under generation %d: cached %v, generation %d", hash, gen, ok, e.gen)
		}
	}
	for range maxCachedPerGrant + 8 {
		put("a", 1)
	}
	put("b", 1)
	put("a", 2)
}
