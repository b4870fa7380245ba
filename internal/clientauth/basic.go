package clientauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
)

// BasicUsers checks the HTTP basic credentials of the api_users of the
// config, hashed with argon2id. A successful check is remembered for a short
// time under an HMAC of the credentials (with a per-process key), so an API
// client that sends the same credentials on every call does not pay an
// argon2id hash each time; a wrong password is never cached.
//
// Every uncached check costs an argon2id hash, so guesses are throttled
// (docs/THROTTLES.md) per address and per username, all unknown usernames
// sharing one counter (varying the name must not escape the limit). An
// attempt is reserved before the hash (concurrent guesses cannot pass the
// limit) and given back when right; a refusal is remembered in memory, so a
// refused caller costs no hash and no store access.
type BasicUsers struct {
	users map[string]string // username -> PHC hash
	dummy string
	key   []byte
	// Throttle counts the attempts (nil: none); Now is its clock (time.Now).
	Throttle store.Throttle
	Now      func() time.Time
	refused  throttle.Memo

	mu    sync.Mutex
	valid map[[32]byte]time.Time
}

const basicCacheFor = time.Minute

// Limits of HTTP basic guesses.
const (
	BasicThrottleWindow  = 15 * time.Minute
	MaxBasicFailsPerIP   = 20
	MaxBasicFailsPerUser = 100
)

// NewBasicUsers returns the users of users (username -> PHC hash).
func NewBasicUsers(users map[string]string) (*BasicUsers, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &BasicUsers{users: users, dummy: password.TimingDummy, key: key, valid: map[[32]byte]time.Time{}}, nil
}

func (b *BasicUsers) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Check returns the username when r carries valid basic credentials.
func (b *BasicUsers) Check(r *http.Request) (string, bool) {
	user, _, err := b.check(r)
	return user, err == nil
}

// Guard checks r's basic credentials; when they do not pass it answers
// (401 with a Basic challenge, or 429 with Retry-After, no body: the error
// style of the basic_auth APIs) and returns ok=false. err is a store failure.
func (b *BasicUsers) Guard(w http.ResponseWriter, r *http.Request) (user string, ok bool, err error) {
	user, retry, err := b.check(r)
	switch {
	case err == nil:
		return user, true, nil
	case retry > 0:
		w.Header().Set("Retry-After", httpx.RetryAfter(retry))
		w.WriteHeader(http.StatusTooManyRequests)
		return "", false, nil
	case errors.Is(err, errBadBasic):
		w.Header().Set("WWW-Authenticate", `Basic realm="latchkey"`)
		w.WriteHeader(http.StatusUnauthorized)
		return "", false, nil
	}
	return "", false, err
}

var errBadBasic = errors.New("clientauth: wrong basic credentials")

// Verify checks r's basic credentials as Guard does, under the same
// throttles, without answering: ErrUnauthenticated for missing or wrong
// credentials, ErrThrottled (RetryAfter says how long) for a throttled
// caller, any other error for a store failure.
func (b *BasicUsers) Verify(r *http.Request) (string, error) {
	user, retry, err := b.check(r)
	switch {
	case err == nil:
		return user, nil
	case retry > 0:
		return "", throttledError(retry, true)
	case errors.Is(err, errBadBasic):
		return "", ErrUnauthenticated
	}
	return "", err
}

func (b *BasicUsers) check(r *http.Request) (string, time.Duration, error) {
	user, pass, ok := r.BasicAuth()
	if !ok || user == "" {
		return "", 0, errBadBasic
	}
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(pass))
	var sum [32]byte
	copy(sum[:], m.Sum(nil))
	now := b.now()
	b.mu.Lock()
	until, cached := b.valid[sum]
	b.mu.Unlock()
	if cached && now.Before(until) {
		return user, 0, nil // proved within the minute: no hash, no throttle
	}
	hash, known := b.users[user]
	if !known {
		hash = b.dummy // same work for unknown users: no timing oracle
	}
	var limits []throttle.Limit
	if b.Throttle != nil {
		userKey := "basic:user:" + user
		if !known {
			userKey = "basic:user:?" // every unknown name shares one counter
		}
		limits = []throttle.Limit{
			{Key: "basic:ip:" + clientaddr.Key(r), Max: MaxBasicFailsPerIP, Window: BasicThrottleWindow},
			{Key: userKey, Max: MaxBasicFailsPerUser, Window: BasicThrottleWindow},
		}
		for _, l := range limits {
			if retry := b.refused.Remaining(l.Key, now); retry > 0 {
				return "", retry, errBadBasic
			}
		}
		if err := throttle.Reserve(r.Context(), b.Throttle, now, limits...); err != nil {
			var refused *throttle.Refused
			if errors.As(err, &refused) {
				b.refused.Hold(refused.Key, refused.RetryAfter, now)
				return "", refused.RetryAfter, errBadBasic
			}
			return "", 0, err
		}
	}
	good, err := password.Verify(hash, pass)
	if !known || err != nil || !good {
		return "", 0, errBadBasic // the reservation stays: a failure
	}
	if err := throttle.Release(r.Context(), b.Throttle, limits...); err != nil {
		return "", 0, err
	}
	b.mu.Lock()
	if len(b.valid) > 10_000 { // bounded: drop everything rather than grow
		b.valid = map[[32]byte]time.Time{}
	}
	b.valid[sum] = now.Add(basicCacheFor)
	b.mu.Unlock()
	return user, 0, nil
}
