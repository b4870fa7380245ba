package token

import (
	"crypto/hmac"
	"crypto/sha256"
)

// fingerprintLabel separates the fingerprint from every other use of the
// server key (the hash labels, the seal purposes): no stored hash or sealed
// value can equal it.
const fingerprintLabel = "latchkey server key fingerprint v1"

// Fingerprint identifies the server key without revealing it: an HMAC of a
// fixed label under the key, which is one-way (the key cannot be recovered
// from it) and, the key being 256 random bits, cannot be brute-forced. The
// store records it so that an instance started with another key is refused.
func Fingerprint(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(fingerprintLabel))
	return m.Sum(nil)
}

// Fingerprint is the fingerprint of the current key, the one new hashes
// are made with.
func (h *Hasher) Fingerprint() []byte {
	return Fingerprint(h.keys[0])
}
