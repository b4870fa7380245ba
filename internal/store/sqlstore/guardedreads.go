package sqlstore

import (
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// guardedReads keeps what guarded reads (GetTokenGrantGuardPerson, on a
// dialect with lazy transactions) found, so that a refresh whose token,
// grant and person have not changed sends only its write. The write's
// guard (latchkey_guard_issue) checks the three rows' versions at the
// commit, as it does after a read, so a kept answer can only be used by a
// run whose guard then holds. A run that answered from here and did not
// send its guard (it refused, or wrote nothing: nothing checked what it
// decided on), or whose guard failed, runs again with a read (runLazyTx),
// and the entry goes.
//
// Only live answers are kept (a token neither revoked nor used, of a grant
// not revoked), without the person's password hash, which no refresh
// reads, and for guardedReadTTL at most: the rows' versions (xmin) are
// transaction ids, which would come round again only after billions of
// transactions.
type guardedReads struct {
	mu      sync.Mutex
	entries map[string]guardedRead
}

type guardedRead struct {
	t          store.Token
	g          store.Grant
	p          store.Person
	pv, tv, gv string // the person's, the token's and the grant's versions
	at         time.Time
}

const (
	guardedReadsSize = 10_000 // a full map starts over
	guardedReadTTL   = time.Minute
)

// get returns hash's entry, if one was kept less than guardedReadTTL ago.
func (c *guardedReads) get(hash []byte, now time.Time) (guardedRead, bool) {
	c.mu.Lock()
	r, ok := c.entries[string(hash)]
	c.mu.Unlock()
	return r, ok && now.Sub(r.at) < guardedReadTTL && now.Sub(r.at) >= 0
}

// put keeps r, read for hash at now, if it is live.
func (c *guardedReads) put(hash []byte, r guardedRead, now time.Time) {
	if !r.t.RevokedAt.IsZero() || !r.t.UsedAt.IsZero() || !r.g.RevokedAt.IsZero() {
		return
	}
	r.p.PasswordHash, r.at = "", now
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= guardedReadsSize {
		c.entries = map[string]guardedRead{}
	}
	c.entries[string(hash)] = r
	c.mu.Unlock()
}

// drop forgets hash's entry.
func (c *guardedReads) drop(hash []byte) {
	c.mu.Lock()
	delete(c.entries, string(hash))
	c.mu.Unlock()
}
