package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
)

// Wrong user codes are throttled per client address, so the 20^8 code space
// cannot be searched. The same rule guards the browser's verification page
// and the in-app approval endpoint (GuessUserCode); docs/THROTTLES.md.
//
// Across the whole service, wrong codes are counted too; past
// MaxWrongCodesGlobal a minute (a distributed search), each address may
// miss only MaxWrongCodesPerIPUnderAttack times per window. The global count
// never refuses an entry by itself: a person typing a valid code from a
// fresh address always gets through. Under attack, 10,000 addresses try
// 6,000 codes a minute; with 1,000 live codes (each lives 10 minutes) a hit
// takes about 2.6·10^7 tries, some three days.
const (
	DeviceThrottleWindow          = 5 * time.Minute
	MaxWrongCodesPerIP            = 20
	MaxWrongCodesPerIPUnderAttack = 3
	GlobalThrottleWindow          = time.Minute
	MaxWrongCodesGlobal           = 1000
)

const globalUserCodeKey = "device:global"

// GuessUserCode looks up a user code someone typed, under the guessing
// throttle: a *throttle.Refused when the address missed too often, else
// LookupUserCode's answer. Each entry is reserved on the address's counter
// before the lookup (concurrent guesses cannot pass the limit); an entry
// that names a code, valid or not, gives its reservation back: only misses
// are counted.
func (s *Service) GuessUserCode(ctx context.Context, f request.Facts, userCode string) (store.DeviceCode, error) {
	now := s.Now()
	max := MaxWrongCodesPerIP
	misses, _, err := s.Store.Count(ctx, globalUserCodeKey, GlobalThrottleWindow, now)
	if err != nil {
		return store.DeviceCode{}, err
	}
	if misses >= MaxWrongCodesGlobal {
		max = MaxWrongCodesPerIPUnderAttack
	}
	addr := throttle.Limit{Key: "device:ip:" + f.AddrKey(), Max: max, Window: DeviceThrottleWindow}
	if err := throttle.Reserve(ctx, s.Store, now, addr); err != nil {
		if errors.As(err, new(*throttle.Refused)) {
			s.record(ctx, f, events.OAuth{Type: events.DeviceUserCodeThrottled})
		}
		return store.DeviceCode{}, err
	}
	d, err := s.LookupUserCode(ctx, userCode)
	if errors.Is(err, ErrUserCodeUnknown) {
		// Counted only to notice a distributed search; its verdict is read
		// by the next entries.
		if _, _, terr := s.Store.Take(ctx, globalUserCodeKey, GlobalThrottleWindow, MaxWrongCodesGlobal, now); terr != nil {
			return d, terr
		}
		return d, err
	}
	if rerr := throttle.Release(ctx, s.Store, addr); rerr != nil {
		return d, rerr
	}
	return d, err
}
