package sqlstore

import (
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// guardedReads keeps only live answers, without the person's password
// hash, and answers them for guardedReadTTL.
func TestGuardedReadsKeepLiveAnswersForAWhile(t *testing.T) {
	var c guardedReads
	now := time.Now()
	live := guardedRead{t: store.Token{Hash: []byte("r1")}, p: store.Person{ID: "p1", PasswordHash: "$argon2id$…"},
		pv: "1", tv: "2", gv: "3"}
	c.put([]byte("r1"), live, now)
	r, ok := c.get([]byte("r1"), now.Add(guardedReadTTL-time.Second))
	if !ok || r.p.ID != "p1" || r.tv != "2" {
		t.Fatalf("a live answer: kept %v, %+v", ok, r)
	}
	if r.p.PasswordHash != "" {
		t.Error("the kept person holds a password hash")
	}
	if _, ok := c.get([]byte("r1"), now.Add(guardedReadTTL)); ok {
		t.Error("an answer older than guardedReadTTL was answered")
	}
	if _, ok := c.get([]byte("r1"), now.Add(-time.Second)); ok {
		t.Error("an answer from the future (a clock stepped back) was answered")
	}
	c.drop([]byte("r1"))
	if _, ok := c.get([]byte("r1"), now); ok {
		t.Error("a dropped answer was answered")
	}
	for name, r := range map[string]guardedRead{
		"a revoked token": {t: store.Token{RevokedAt: now}},
		"a used token":    {t: store.Token{UsedAt: now}},
		"a revoked grant": {g: store.Grant{RevokedAt: now}},
	} {
		c.put([]byte(name), r, now)
		if _, ok := c.get([]byte(name), now); ok {
			t.Errorf("%s was kept", name)
		}
	}
}
