package token

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// tokenTable is a TokenGrants in memory.
type tokenTable struct {
	rows map[string]struct {
		t store.Token
		g store.Grant
	}
	err error
}

func (tt *tokenTable) GetTokenGrant(_ context.Context, key []byte) (store.Token, store.Grant, error) {
	if tt.err != nil {
		return store.Token{}, store.Grant{}, tt.err
	}
	row, ok := tt.rows[string(key)]
	if !ok {
		return store.Token{}, store.Grant{}, store.ErrNotFound
	}
	return row.t, row.g, nil
}

func TestActive(t *testing.T) {
	h, err := NewHasher(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s := Opaque{Hasher: h}
	now := time.Now().UTC()
	live := func(kind string) (store.Token, store.Grant) {
		return store.Token{Kind: kind, ClientID: "c", IssuedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour)},
			store.Grant{ID: "g", ClientID: "c", ExpiresAt: now.Add(24 * time.Hour)}
	}
	for _, tc := range []struct {
		name   string
		kind   Kind   // presented as
		stored string // store kind of the row; "" for no row
		edit   func(*store.Token, *store.Grant)
		err    error
	}{
		{name: "a live access token is active", kind: AccessToken, stored: store.KindAccess},
		{name: "a live refresh token is active", kind: RefreshToken, stored: store.KindRefresh},
		{name: "an unknown token is inactive", kind: AccessToken, err: ErrInactive},
		{name: "an expired token is inactive", kind: AccessToken, stored: store.KindAccess,
			edit: func(t *store.Token, _ *store.Grant) { t.ExpiresAt = now }, err: ErrInactive},
		{name: "a revoked token is inactive", kind: AccessToken, stored: store.KindAccess,
			edit: func(t *store.Token, _ *store.Grant) { t.RevokedAt = now }, err: ErrInactive},
		{name: "a token of a revoked grant is inactive", kind: AccessToken, stored: store.KindAccess,
			edit: func(_ *store.Token, g *store.Grant) { g.RevokedAt = now }, err: ErrInactive},
		{name: "a token of an ended grant is inactive", kind: AccessToken, stored: store.KindAccess,
			edit: func(_ *store.Token, g *store.Grant) { g.ExpiresAt = now }, err: ErrInactive},
		{name: "a rotated (used) refresh token is inactive", kind: RefreshToken, stored: store.KindRefresh,
			edit: func(t *store.Token, _ *store.Grant) { t.UsedAt = now }, err: ErrInactive},
		{name: "a row of another kind than presented is inactive", kind: AccessToken, stored: store.KindRefresh,
			err: ErrInactive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, key, err := s.Mint(tc.kind, Claims{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(value, tc.kind.Prefix) || !bytes.Equal(key, s.Key(tc.kind, value)) {
				t.Fatalf("Mint gave %q and a key Key does not find again", value)
			}
			src := &tokenTable{rows: map[string]struct {
				t store.Token
				g store.Grant
			}{}}
			if tc.stored != "" {
				tok, g := live(tc.stored)
				if tc.edit != nil {
					tc.edit(&tok, &g)
				}
				src.rows[string(key)] = struct {
					t store.Token
					g store.Grant
				}{tok, g}
			}
			found, err := Active(context.Background(), s, src, tc.kind, value, now)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Active: %v, want %v", err, tc.err)
			}
			if tc.err == nil && (found.Grant.ID != "g" || !bytes.Equal(found.Key, key) || found.Token.Kind != tc.stored) {
				t.Errorf("Active found %+v, want the stored row under its key", found)
			}
		})
	}
}

func TestActivePassesStoreTrouble(t *testing.T) {
	h, err := NewHasher(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	trouble := errors.New("disk on fire")
	_, err = Active(context.Background(), Opaque{Hasher: h}, &tokenTable{err: trouble}, AccessToken, "lk_at_x", time.Now())
	if !errors.Is(err, trouble) || errors.Is(err, ErrInactive) {
		t.Errorf("Active with a failing store: %v, want the store's error, not inactive", err)
	}
}

// uses is a TokenUses that counts its calls and answers with err.
type uses struct {
	calls int
	limit int
	err   error
}

func (u *uses) SpendTokenUse(_ context.Context, key []byte, _ *store.Event) (store.Token, error) {
	u.calls++
	if u.err != nil {
		return store.Token{}, u.err
	}
	if u.calls > u.limit {
		return store.Token{UsageLimit: u.limit, UsageCount: u.limit}, store.ErrConflict
	}
	return store.Token{Hash: key, Kind: store.KindAccess, UsageLimit: u.limit, UsageCount: u.calls}, nil
}

func TestSpend(t *testing.T) {
	ctx := context.Background()
	limited := Found{Key: []byte("k"), Token: store.Token{Kind: store.KindAccess, UsageLimit: 2}}
	t.Run("counts each use up to the limit, then refuses", func(t *testing.T) {
		u := &uses{limit: 2}
		for i := 1; i <= 2; i++ {
			got, err := Spend(ctx, u, limited)
			if err != nil || got.UsageCount != i {
				t.Fatalf("use %d: %+v, %v", i, got, err)
			}
		}
		if _, err := Spend(ctx, u, limited); !errors.Is(err, ErrExhausted) || !errors.Is(err, ErrInactive) {
			t.Errorf("past the limit: %v, want ErrExhausted (and ErrInactive)", err)
		}
	})
	t.Run("no limit, or a refresh token: nothing counted", func(t *testing.T) {
		u := &uses{limit: 0}
		for _, f := range []Found{
			{Key: []byte("k"), Token: store.Token{Kind: store.KindAccess}},
			{Key: []byte("k"), Token: store.Token{Kind: store.KindRefresh, UsageLimit: 2}},
		} {
			if got, err := Spend(ctx, u, f); err != nil || got.Kind != f.Token.Kind {
				t.Errorf("%+v: %+v, %v", f.Token, got, err)
			}
		}
		if u.calls != 0 {
			t.Errorf("%d uses counted, want none", u.calls)
		}
	})
	t.Run("a store error is not taken for exhaustion", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := Spend(ctx, &uses{err: boom}, limited); !errors.Is(err, boom) || errors.Is(err, ErrInactive) {
			t.Errorf("got %v, want the store's error", err)
		}
	})
}
