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

// SetDevicePoll writes only over the poll state it was decided on, and
// only while the code is pending; of concurrent polls decided on the same
// read, exactly one writes.
func testSetDevicePoll(t *testing.T, s store.Store) {
	d := device("h1", "BCDFGHJQ")
	if err := s.CreateDeviceCode(ctx(), d); err != nil {
		t.Fatal(err)
	}
	next := d
	next.LastPolledAt, next.Interval = t0.Add(time.Second).UTC(), 10
	set := func(old, d store.DeviceCode, want bool, why string) {
		t.Helper()
		if wrote, err := s.SetDevicePoll(ctx(), []byte("h1"), old, d); err != nil || wrote != want {
			t.Errorf("%s: wrote %v, %v; want %v", why, wrote, err, want)
		}
	}
	set(d, next, true, "as read")
	set(d, next, false, "over a state another poll changed")
	if got, _ := s.GetDeviceCode(ctx(), []byte("h1")); !got.LastPolledAt.Equal(next.LastPolledAt) || got.Interval != 10 {
		t.Errorf("poll state %v, %d", got.LastPolledAt, got.Interval)
	}
	if wrote, err := s.SetDevicePoll(ctx(), []byte("nope"), d, next); err != nil || wrote {
		t.Errorf("unknown code: %v, %v", wrote, err)
	}
	later := next
	later.LastPolledAt = t0.Add(time.Minute).UTC()
	wins := race(t, 20, func() error {
		wrote, err := s.SetDevicePoll(ctx(), []byte("h1"), next, later)
		if err == nil && !wrote {
			return errLost
		}
		return err
	}, errLost)
	if wins != 1 {
		t.Errorf("%d of 20 polls decided on one read wrote, want 1", wins)
	}
	if _, err := s.UpdateDeviceCode(ctx(), []byte("h1"), func(d store.DeviceCode) (store.DeviceCode, error) {
		d.Status = store.DeviceApproved
		return d, nil
	}); err != nil {
		t.Fatal(err)
	}
	approved := later
	approved.LastPolledAt = t0.Add(2 * time.Minute).UTC()
	set(later, approved, false, "once the person decided")
	if got, _ := s.GetDeviceCode(ctx(), []byte("h1")); got.Status != store.DeviceApproved || !got.LastPolledAt.Equal(later.LastPolledAt) {
		t.Errorf("after the decision: %s, %v", got.Status, got.LastPolledAt)
	}
}

var errLost = errors.New("lost the compare-and-set")
