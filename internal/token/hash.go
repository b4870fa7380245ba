// Package token mints the opaque secrets latchkey hands out (tokens, codes,
// client secrets) and computes the keyed hashes under which they are stored.
package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// KeySize is the length of the server key in bytes (256 bits).
const KeySize = 32

// Hasher computes keyed hashes (HMAC-SHA-256) of secrets. The store keeps only
// these hashes and looks secrets up by them, so a stolen database yields no
// usable token. A label separates the uses of the one server key, so a hash
// made for one kind of secret never matches another kind.
type Hasher struct {
	keys [][]byte // keys[0] signs; older keys still verify (rotation)
	// macs[i] holds keyed HMAC states of keys[i] between uses: a new one
	// costs two SHA-256 blocks and several allocations, and every request
	// hashes a token or a secret.
	macs []sync.Pool
	// Stamped: Mint makes values that carry their mint time, with keys
	// that grow with it (below). Off, it makes plain values (256 random
	// bits, keyed by the keyed hash alone), the only kind releases before
	// stamps can look up. HashOf reads both kinds either way.
	Stamped bool
}

// NewHasher returns a Hasher. The first key is current; the others are older
// keys still accepted by Verify.
func NewHasher(keys ...[]byte) (*Hasher, error) {
	if len(keys) == 0 {
		return nil, errors.New("token: no server key")
	}
	for _, k := range keys {
		if len(k) < KeySize {
			return nil, fmt.Errorf("token: server key must be at least %d bytes", KeySize)
		}
	}
	return &Hasher{keys: keys, macs: make([]sync.Pool, len(keys))}, nil
}

// Hash returns the keyed hash of secret under the current key.
func (h *Hasher) Hash(label, secret string) []byte {
	return h.mac(0, nil, label, secret)
}

// Verify reports, in constant time per key, whether sum is the keyed hash of
// secret under the current or an older key.
func (h *Hasher) Verify(label, secret string, sum []byte) bool {
	ok := false
	for i := range h.keys {
		if hmac.Equal(h.mac(i, nil, label, secret), sum) {
			ok = true
		}
	}
	return ok
}

// keyedMAC is a keyed HMAC state and the buffer its input is gathered in
// (one Write, and no conversion of label and secret to bytes of their own).
type keyedMAC struct {
	h   hash.Hash
	buf []byte
}

// mac appends to dst the HMAC-SHA-256 under keys[i] of label, a zero byte
// and secret.
func (h *Hasher) mac(i int, dst []byte, label, secret string) []byte {
	m, _ := h.macs[i].Get().(*keyedMAC)
	if m == nil {
		m = &keyedMAC{h: hmac.New(sha256.New, h.keys[i])}
	}
	dst = m.sum(dst, label, secret)
	if cap(m.buf) <= maxPooledInput {
		h.macs[i].Put(m)
	}
	return dst
}

// sum appends the MAC of label, a zero byte and secret to dst, and leaves m
// keyed and ready for the next, its buffer cleared: a pooled state does not
// keep the last secret it hashed.
func (m *keyedMAC) sum(dst []byte, label, secret string) []byte {
	m.buf = append(append(append(m.buf[:0], label...), 0), secret...)
	m.h.Write(m.buf)
	dst = m.h.Sum(dst)
	m.h.Reset()
	clear(m.buf)
	return dst
}

// maxPooledInput bounds the buffer a pooled state keeps: a request's
// oversized secret is hashed once and its buffer let go.
const maxPooledInput = 1 << 10

// Labels of the hashed secret kinds.
const (
	LabelClientSecret = "client_secret"
)

// Random returns n bytes from crypto/rand encoded as unpadded base64url.
func Random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms (Go 1.24+ panics itself).
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// OrderedID returns a unique id that sorts after the ids of earlier
// milliseconds: the time in hex, then 80 random bits. Rows keyed by it are
// appended where the previous ones were, so the grants a group commit
// writes together share b-tree pages instead of each dirtying a random one.
// Not a secret: it shows when it was made.
func OrderedID(now time.Time) string {
	return fmt.Sprintf("%012x", uint64(now.UnixMilli())&(1<<48-1)) + Random(10)
}

// LoadOrCreateKey reads the server key from path, creating it with 0600
// permissions (and its folder with 0700) when it does not exist.
func LoadOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < KeySize {
			return nil, fmt.Errorf("secret key file %s: holds %d bytes, need at least %d", path, len(b), KeySize)
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	// Write a temporary file and hard-link it into place: the link fails when
	// another instance won the race, and nobody ever reads a half-written key.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-*")
	if err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return LoadOrCreateKey(path)
		}
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	return key, nil
}

// Kinds of minted secrets. The prefix lets secret scanners (and people) tell
// them apart; the label keeps their hashes in separate domains.
type Kind struct {
	Prefix string
	Label  string
}

// The kinds latchkey mints.
var (
	AccessToken  = Kind{Prefix: "lk_at_", Label: "access_token"}
	RefreshToken = Kind{Prefix: "lk_rt_", Label: "refresh_token"}
	AuthCode     = Kind{Prefix: "lk_ac_", Label: "authorization_code"}
	DeviceCode   = Kind{Prefix: "lk_dc_", Label: "device_code"}
	Session      = Kind{Prefix: "lk_se_", Label: "session"}
)

// A minted value's body is the millisecond it was minted (48 bits) and 256
// random bits, and its key (HashOf) starts with that stamp. The stores keep
// tokens, codes and sessions in b-trees ordered by key, so new keys land at
// the right edge, on pages already in memory, however many rows the tables
// hold; a keyed hash alone sends each insert to a random leaf. The stamp
// shows when the value was minted, which its holder learns anyway
// (expires_in, introspection's iat).
const (
	stampSize  = 6
	mintedSize = stampSize + 32
)

// mintedLen is the length of a stamped body in base64url. Plain values
// (43 characters: minted before stamps, or without Stamped) keep the plain
// keyed hash as their key.
var mintedLen = base64.RawURLEncoding.EncodedLen(mintedSize)

// Mint returns a new secret of kind k and the key the store keeps it under.
func (h *Hasher) Mint(k Kind) (value string, key []byte) {
	if !h.Stamped {
		value = k.Prefix + Random(32)
		return value, h.Hash(k.Label, value)
	}
	return h.mintAt(k, time.Now())
}

func (h *Hasher) mintAt(k Kind, now time.Time) (string, []byte) {
	var b [mintedSize]byte
	ms := uint64(now.UnixMilli())
	for i := range stampSize {
		b[i] = byte(ms >> (8 * (stampSize - 1 - i)))
	}
	if _, err := rand.Read(b[stampSize:]); err != nil {
		panic(err) // as in Random
	}
	value := k.Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return value, h.HashOf(k, value)
}

// HashOf returns the key of a presented value of kind k: the keyed hash of
// the whole value, after the value's stamp when it has one. A forged stamp
// only changes where the lookup searches; the hash still has to match.
func (h *Hasher) HashOf(k Kind, value string) []byte {
	body, ok := strings.CutPrefix(value, k.Prefix)
	if !ok || len(body) != mintedLen {
		return h.Hash(k.Label, value)
	}
	// 8 base64url characters are exactly the 6 bytes of the stamp (fewer
	// when the decoder skipped a line break).
	key := make([]byte, stampSize, stampSize+sha256.Size)
	if n, err := base64.RawURLEncoding.Decode(key, []byte(body[:8])); err != nil || n != stampSize {
		return h.Hash(k.Label, value)
	}
	return h.mac(0, key, k.Label, value)
}
