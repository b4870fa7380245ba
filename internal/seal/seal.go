// Package seal encrypts small secrets at rest (TOTP secrets, private keys)
// with AES-256-GCM under a key derived from the server key, one derived key
// per purpose. The associated data binds a sealed value to its owner (a
// person id, a key pair name), so a value copied to another row fails to open.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// version prefixes every sealed value so that the scheme can change later.
const version = 1

// ErrOpen is returned for a sealed value that is malformed, was sealed under
// another key or purpose, or has been tampered with.
var ErrOpen = errors.New("seal: cannot open the sealed value")

// Sealer seals and opens values for one purpose.
type Sealer struct {
	aead cipher.AEAD
}

// New derives the purpose's key from the server key.
func New(serverKey []byte, purpose string) (*Sealer, error) {
	if len(serverKey) < 32 {
		return nil, errors.New("seal: server key must be at least 32 bytes")
	}
	key, err := hkdf.Key(sha256.New, serverKey, nil, "latchkey seal "+purpose, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext bound to aad: version || nonce || ciphertext.
func (s *Sealer) Seal(plaintext, aad []byte) []byte {
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return s.aead.Seal(out, out[1:], plaintext, aad)
}

// Open decrypts a value of Seal made with the same aad.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	out, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}
