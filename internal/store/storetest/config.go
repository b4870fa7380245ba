package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

func testConfigUnits(t *testing.T, s store.Store) {
	ctx := context.Background()
	units, err := s.GetConfigUnits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 12 || units["features"] != "" || units["key_pairs"] != "" {
		t.Fatalf("fresh store units %v: want the 12 units, never set", units)
	}
	err = s.UpdateConfigUnits(ctx, []string{"features", "redirects"}, func(old map[string]string) (map[string]string, error) {
		if len(old) != 2 {
			t.Errorf("fn got %v, want the two named units", old)
		}
		return map[string]string{"features": `{"login_enabled":true}`}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	units, _ = s.GetConfigUnits(ctx)
	if units["features"] != `{"login_enabled":true}` || units["redirects"] != "" {
		t.Errorf("after update: %v", units)
	}

	boom := errors.New("boom")
	err = s.UpdateConfigUnits(ctx, []string{"features"}, func(map[string]string) (map[string]string, error) {
		return map[string]string{"features": `{}`}, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("fn error: got %v", err)
	}
	if err := s.UpdateConfigUnits(ctx, []string{"features", "nonsense"}, func(map[string]string) (map[string]string, error) {
		t.Error("fn called for an unknown unit")
		return nil, nil
	}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown unit: got %v, want ErrNotFound", err)
	}
	units, _ = s.GetConfigUnits(ctx)
	if units["features"] != `{"login_enabled":true}` {
		t.Errorf("a failed update changed the unit: %v", units["features"])
	}
}

// testConfigUnitRace: concurrent read-modify-writes of one unit (as when
// whitelisted URLs are added at once) lose none of them.
func testConfigUnitRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.UpdateConfigUnits(ctx, []string{"redirects"}, func(old map[string]string) (map[string]string, error) {
				count := 0
				if b := old["redirects"]; b != "" {
					count, _ = strconv.Atoi(b)
				}
				return map[string]string{"redirects": strconv.Itoa(count + 1)}, nil
			})
			if err != nil {
				t.Errorf("update %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	units, err := s.GetConfigUnits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if units["redirects"] != fmt.Sprint(n) {
		t.Errorf("after %d concurrent increments the unit is %q", n, units["redirects"])
	}
}
