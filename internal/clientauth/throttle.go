package clientauth

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
)

// Failed client secrets are throttled per address and per client id
// (docs/THROTTLES.md). Only failures are counted, in the shared store; a
// refusal the store gave is remembered in memory until its window ends, and
// checked before the secret is: a throttled caller costs neither a store
// read nor a hash (a PHC secret costs an argon2id or bcrypt hash). A
// correct secret costs no store access at all, so the token endpoint's hot
// path is unchanged.
//
// Across instances a refusal is learnt at the first failure after the
// limit, so each instance verifies at most one guess more per window.
const (
	ClientThrottleWindow    = 15 * time.Minute
	MaxClientFailsPerIP     = 50
	MaxClientFailsPerClient = 100
	// An address that authenticated as a client is spared that client's
	// per-id limit for this long (in memory): someone failing against the
	// id from elsewhere does not lock the client out of its own address.
	knownAddressFor = time.Hour
)

// ErrThrottled: the caller failed too often; answer 429 with Retry-After
// (RetryAfter tells how long).
var ErrThrottled = errors.New("clientauth: too many failed authentications")

// guess kinds of a failed secret, for the counters.
const (
	guessNone          = iota
	guessUnknownClient // counted per address only: random ids must not grow the table
	guessWrongSecret
)

func throttledError(retry time.Duration, basic bool) *Error {
	return &Error{Code: "too_many_attempts", Description: "Too many failed client authentications. Retry later.",
		Basic: basic, RetryAfter: retry, Cause: ErrThrottled}
}

// RetryAfter reports how long a throttled caller must wait (ok=false: err is
// no throttle refusal).
func RetryAfter(err error) (time.Duration, bool) {
	var ce *Error
	if errors.As(err, &ce) && ce.RetryAfter > 0 {
		return ce.RetryAfter, true
	}
	return 0, false
}

// guardedSecret is checkSecret under the client-secret throttle.
func (a *Authenticator) guardedSecret(ctx context.Context, r *http.Request, id, secret string, m Method) (store.Client, error) {
	if a.Throttle == nil {
		return a.checkSecret(ctx, id, secret, m)
	}
	now := a.now()
	addr := clientaddr.Key(r)
	ipKey, idKey, pair := "client:ip:"+addr, "client:id:"+id, id+"\x00"+addr
	known := a.known.Remaining(pair, now)
	retry := a.refused.Remaining(ipKey, now)
	if known == 0 {
		retry = max(retry, a.refused.Remaining(idKey, now))
	}
	if retry > 0 {
		if a.refused.Remaining(ipKey, now) > 0 {
			throttle.CountRefusal(ipKey)
		} else {
			throttle.CountRefusal(idKey)
		}
		return store.Client{}, throttledError(retry, false)
	}
	c, err := a.checkSecret(ctx, id, secret, m)
	var ce *Error
	if err == nil {
		if known < knownAddressFor/2 { // refreshed now and then, not at every request
			a.known.Hold(pair, knownAddressFor, now)
		}
		return c, nil
	}
	if !errors.As(err, &ce) || ce.guess == guessNone {
		return c, err
	}
	limits := []throttle.Limit{{Key: ipKey, Max: MaxClientFailsPerIP, Window: ClientThrottleWindow}}
	if ce.guess == guessWrongSecret {
		limits = append(limits, throttle.Limit{Key: idKey, Max: MaxClientFailsPerClient, Window: ClientThrottleWindow})
	}
	var worst time.Duration
	for _, l := range limits {
		ok, retry, terr := a.Throttle.Take(ctx, l.Key, l.Window, l.Max, now)
		if terr != nil {
			return c, terr
		}
		if !ok {
			throttle.CountRefusal(l.Key)
			a.refused.Hold(l.Key, retry, now)
			worst = max(worst, retry)
		}
	}
	if worst > 0 {
		return c, throttledError(worst, false)
	}
	return c, err
}
