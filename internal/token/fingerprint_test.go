package token

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// The fingerprint is recorded in every database: a change to its derivation
// would lock every deployment out, so the derivation is pinned (the value
// computed independently, with Python's hmac module).
func TestFingerprintIsPinned(t *testing.T) {
	key := bytes.Repeat([]byte{1}, KeySize)
	const want = "0162dc3b3d49ef533eb5a4562573c6348f3dd26ebb71c48e8cc4a0a731761f01"
	if got := hex.EncodeToString(Fingerprint(key)); got != want {
		t.Errorf("Fingerprint = %s, want %s", got, want)
	}
}

func TestFingerprintIsOfTheCurrentKeyAndApartFromHashes(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	if bytes.Equal(Fingerprint(k1), Fingerprint(k2)) {
		t.Error("two keys have one fingerprint")
	}
	if bytes.Contains(Fingerprint(k1), k1[:8]) {
		t.Error("the fingerprint holds key bytes")
	}
	h, err := NewHasher(k2, k1) // k1 is an older key: it verifies, but is not the one recorded
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Fingerprint(), Fingerprint(k2)) {
		t.Error("Hasher.Fingerprint is not of the current key")
	}
	// The label is the whole message, with no 0 byte: no keyed hash of a
	// secret (label, 0, secret) can equal it.
	for _, label := range []string{fingerprintLabel, "latchkey server key fingerprint", ""} {
		if bytes.Equal(h.Hash(label, ""), h.Fingerprint()) {
			t.Errorf("Hash(%q, \"\") equals the fingerprint", label)
		}
	}
}
