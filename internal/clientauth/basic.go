package clientauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/password"
)

// BasicUsers checks the HTTP basic credentials of the api_users of the
// config, hashed with argon2id. A successful check is remembered for a short
// time under an HMAC of the credentials (with a per-process key), so an API
// client that sends the same credentials on every call does not pay an
// argon2id hash each time; a wrong password is never cached.
type BasicUsers struct {
	users map[string]string // username -> PHC hash
	dummy string
	key   []byte

	mu    sync.Mutex
	valid map[[32]byte]time.Time
}

const basicCacheFor = time.Minute

// NewBasicUsers returns the users of users (username -> PHC hash).
func NewBasicUsers(users map[string]string) (*BasicUsers, error) {
	dummy, err := password.Hash("latchkey-timing-equaliser")
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &BasicUsers{users: users, dummy: dummy, key: key, valid: map[[32]byte]time.Time{}}, nil
}

// Check returns the username when r carries valid basic credentials.
func (b *BasicUsers) Check(r *http.Request) (string, bool) {
	user, pass, ok := r.BasicAuth()
	if !ok || user == "" {
		return "", false
	}
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(pass))
	var sum [32]byte
	copy(sum[:], m.Sum(nil))
	now := time.Now()
	b.mu.Lock()
	until, cached := b.valid[sum]
	b.mu.Unlock()
	if cached && now.Before(until) {
		return user, true
	}
	hash, known := b.users[user]
	if !known {
		hash = b.dummy // same work for unknown users: no timing oracle
	}
	good, err := password.Verify(hash, pass)
	if !known || err != nil || !good {
		return "", false
	}
	b.mu.Lock()
	if len(b.valid) > 10_000 { // bounded: drop everything rather than grow
		b.valid = map[[32]byte]time.Time{}
	}
	b.valid[sum] = now.Add(basicCacheFor)
	b.mu.Unlock()
	return user, true
}
