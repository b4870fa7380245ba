package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func testHasher(t testing.TB) *Hasher {
	h, err := NewHasher(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestMintIsPrefixedRandomAndHashed(t *testing.T) {
	h := testHasher(t)
	h.Stamped = true
	v1, h1 := h.Mint(AccessToken)
	v2, _ := h.Mint(AccessToken)
	if !strings.HasPrefix(v1, "lk_at_") || len(v1) != len("lk_at_")+51 {
		t.Errorf("value %q: want lk_at_ + 51 base64url characters (a 48-bit stamp and 256 random bits)", v1)
	}
	if v1 == v2 {
		t.Error("two mints gave the same value")
	}
	if !bytes.Equal(h.HashOf(AccessToken, v1), h1) {
		t.Error("HashOf does not match the minted hash")
	}
	if bytes.Equal(h.HashOf(RefreshToken, v1), h1) {
		t.Error("labels must separate the hash domains of token kinds")
	}
}

func TestKeysFollowMintTime(t *testing.T) {
	h := testHasher(t)
	start := time.Now()
	var prev []byte
	for i := range 50 {
		// Within one millisecond keys are random; across milliseconds they
		// sort by mint time, whatever their random part.
		v, key := h.mintAt(AccessToken, start.Add(time.Duration(i)*time.Millisecond))
		if len(key) != stampSize+32 {
			t.Fatalf("key of %q has %d bytes, want %d", v, len(key), stampSize+32)
		}
		if !bytes.Equal(key[stampSize:], h.Hash(AccessToken.Label, v)) {
			t.Fatal("a key must end with the keyed hash of the whole value")
		}
		if prev != nil && bytes.Compare(prev, key) >= 0 {
			t.Fatalf("key %d does not sort after the key minted a millisecond earlier", i)
		}
		prev = key
	}
}

func TestHashOfValuesWithoutStamp(t *testing.T) {
	h := testHasher(t)
	// A plain value (43 characters: what releases before stamps mint and
	// read, and what Mint makes unless Stamped) is found under its plain
	// keyed hash, as they store it.
	plain, plainKey := h.Mint(AccessToken)
	if len(plain) != len(AccessToken.Prefix)+43 || !bytes.Equal(plainKey, h.Hash(AccessToken.Label, plain)) {
		t.Errorf("plain mint %q: want 43 characters, keyed by the keyed hash alone", plain)
	}
	if got := h.HashOf(AccessToken, plain); !bytes.Equal(got, plainKey) {
		t.Error("a value without stamp must keep its plain keyed hash as key")
	}
	h.Stamped = true
	v, key := h.Mint(AccessToken)
	body := v[len(AccessToken.Prefix):]
	for name, other := range map[string]string{
		"another stamp":         AccessToken.Prefix + "AAAAAAAA" + body[8:],
		"another random part":   v[:len(v)-2] + map[bool]string{true: "AA", false: "BA"}[v[len(v)-2:] != "AA"],
		"another kind's prefix": RefreshToken.Prefix + body,
		"stamp not base64url":   AccessToken.Prefix + "!!!!!!!!" + body[8:],
		"one character short":   v[:len(v)-1],
	} {
		if bytes.Equal(h.HashOf(AccessToken, other), key) {
			t.Errorf("%s: found under the minted key", name)
		}
	}
}

func FuzzHashOf(f *testing.F) {
	h := testHasher(f)
	v, _ := h.mintAt(AccessToken, time.Now())
	for _, s := range []string{v, "lk_at_", "lk_at_x", AccessToken.Prefix + Random(32), v + "=", "lk_at_" + strings.Repeat("-", 51)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		key := h.HashOf(AccessToken, value)
		sum := h.Hash(AccessToken.Label, value)
		switch len(key) {
		case len(sum):
			if !bytes.Equal(key, sum) {
				t.Fatal("a key without stamp is not the keyed hash")
			}
		case stampSize + len(sum):
			if !bytes.Equal(key[stampSize:], sum) {
				t.Fatal("a stamped key does not end with the keyed hash")
			}
		default:
			t.Fatalf("key of %d bytes", len(key))
		}
	})
}

func TestVerifyAcceptsRotatedKeys(t *testing.T) {
	old, _ := NewHasher(bytes.Repeat([]byte{1}, KeySize))
	sum := old.Hash(LabelClientSecret, "s3cret-s3cret-s3cret")
	rotated, _ := NewHasher(bytes.Repeat([]byte{2}, KeySize), bytes.Repeat([]byte{1}, KeySize))
	if !rotated.Verify(LabelClientSecret, "s3cret-s3cret-s3cret", sum) {
		t.Error("a hash made under the previous key must still verify")
	}
	if rotated.Verify(LabelClientSecret, "wrong", sum) {
		t.Error("wrong secret verified")
	}
	if _, err := NewHasher([]byte("short")); err == nil {
		t.Error("a short key was accepted")
	}
}

// TestReusedStatesHashAsNewOnes: the pooled HMAC states give what a new
// HMAC gives, for each key, whatever came before them on the same state
// (a longer secret, an oversized one that is not kept, a stamped value), and
// when many goroutines share the pools (run with -race).
func TestReusedStatesHashAsNewOnes(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	h, err := NewHasher(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	h.Stamped = true
	want := func(key []byte, label, secret string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(label + "\x00" + secret))
		return m.Sum(nil)
	}
	secrets := []string{"", "s", strings.Repeat("long secret ", 40), strings.Repeat("x", 2*maxPooledInput), "s3cret"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				secret := secrets[(g+i)%len(secrets)]
				if got := h.Hash(LabelClientSecret, secret); !bytes.Equal(got, want(k1, LabelClientSecret, secret)) {
					t.Errorf("Hash of a %d-byte secret differs from a new HMAC's", len(secret))
					return
				}
				if !h.Verify(LabelClientSecret, secret, want(k2, LabelClientSecret, secret)) {
					t.Errorf("Verify under the older key failed for a %d-byte secret", len(secret))
					return
				}
				v, key := h.Mint(AccessToken)
				if !bytes.Equal(key[stampSize:], want(k1, AccessToken.Label, v)) || !bytes.Equal(h.HashOf(AccessToken, v), key) {
					t.Error("a stamped key does not end with a new HMAC of the value")
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestPooledStatesKeepNoSecret: the buffer a state waits with holds no
// byte of the secret it last hashed.
func TestPooledStatesKeepNoSecret(t *testing.T) {
	h := testHasher(t)
	secret := "a-client-secret-to-forget"
	m := &keyedMAC{h: hmac.New(sha256.New, h.keys[0])}
	if got := m.sum(nil, LabelClientSecret, secret); !bytes.Equal(got, h.Hash(LabelClientSecret, secret)) {
		t.Error("a state's sum differs from Hash")
	}
	if strings.Contains(string(m.buf[:cap(m.buf)]), secret) {
		t.Error("the state's buffer still holds the secret")
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "secret.key")
	var wg sync.WaitGroup
	keys := make([][]byte, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreateKey(p)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("concurrent starts created different keys")
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", fi.Mode().Perm())
	}
	if err := os.WriteFile(p, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(p); err == nil {
		t.Error("a short key file was accepted")
	}
}

func BenchmarkMint(b *testing.B) {
	h := testHasher(b)
	for b.Loop() {
		h.Mint(AccessToken)
	}
}

func BenchmarkHashOf(b *testing.B) {
	h := testHasher(b)
	v, _ := h.Mint(AccessToken)
	for b.Loop() {
		h.HashOf(AccessToken, v)
	}
}

func TestOrderedID(t *testing.T) {
	t0 := time.UnixMilli(1_790_000_000_000)
	seen := map[string]bool{}
	prev := ""
	for i := range 1000 {
		id := OrderedID(t0.Add(time.Duration(i/10) * time.Millisecond))
		if len(id) != 26 {
			t.Fatalf("%q: %d characters", id, len(id))
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id] = true
		if i%10 == 0 && id < prev {
			t.Fatalf("%q sorts before %q of an earlier millisecond", id, prev)
		}
		prev = id
	}
}
