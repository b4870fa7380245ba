package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

func device(hash, userCode string) store.DeviceCode {
	return store.DeviceCode{Hash: []byte(hash), UserCode: userCode, ClientID: "tv", Scopes: []string{"read"}, IDP: "idp1",
		Interval: 5, Status: store.DevicePending, CreatedAt: t0.UTC(), ExpiresAt: t0.Add(10 * time.Minute).UTC()}
}

func testDeviceCodes(t *testing.T, s store.Store) {
	d := device("h1", "BCDFGHJK")
	if err := s.CreateDeviceCode(ctx(), d); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDeviceCode(ctx(), device("h2", "BCDFGHJK")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a taken user code: %v, want ErrConflict", err)
	}
	got, err := s.GetDeviceCodeByUserCode(ctx(), "BCDFGHJK")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := s.GetDeviceCode(ctx(), []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	upd, err := s.UpdateDeviceCode(ctx(), []byte("h1"), func(d store.DeviceCode) (store.DeviceCode, error) {
		d.Status, d.Subject, d.AuthLevel, d.AMR, d.ApprovedBy, d.Interval, d.LastPolledAt =
			store.DeviceApproved, "p1", 1, []string{"DEFAULT"}, "app", 10, t0.UTC()
		return d, nil
	})
	if err != nil || upd.Status != store.DeviceApproved {
		t.Fatalf("update: %+v %v", upd, err)
	}
	got, _ = s.GetDeviceCode(ctx(), []byte("h1"))
	if diff := cmp.Diff(upd, got); diff != "" {
		t.Errorf("after update (-want +got):\n%s", diff)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateDeviceCode(ctx(), []byte("h1"), func(d store.DeviceCode) (store.DeviceCode, error) {
		d.Status = store.DeviceDenied
		return d, boom
	}); !errors.Is(err, boom) {
		t.Errorf("fn error: %v", err)
	}
	if got, _ = s.GetDeviceCode(ctx(), []byte("h1")); got.Status != store.DeviceApproved {
		t.Errorf("a failed update wrote %s", got.Status)
	}
	if _, err := s.UpdateDeviceCode(ctx(), []byte("nope"), func(d store.DeviceCode) (store.DeviceCode, error) { return d, nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update unknown: %v", err)
	}
}

// Many polls of an approved code: exactly one turns it into tokens.
func testDeviceCodeRace(t *testing.T, s store.Store) {
	d := device("h1", "ZXWVTSRQ")
	d.Status = store.DeviceApproved
	if err := s.CreateDeviceCode(ctx(), d); err != nil {
		t.Fatal(err)
	}
	used := errors.New("used")
	wins := race(t, 20, func() error {
		_, err := s.UpdateDeviceCode(ctx(), []byte("h1"), func(d store.DeviceCode) (store.DeviceCode, error) {
			if d.Status != store.DeviceApproved {
				return d, used
			}
			d.Status = store.DeviceUsed
			return d, nil
		})
		return err
	}, used)
	if wins != 1 {
		t.Errorf("%d of 20 concurrent polls used the code, want 1", wins)
	}
}
