package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	s, err := New(key, "totp")
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("12345678901234567890")
	sealed := s.Seal(secret, []byte("person-1"))
	if bytes.Contains(sealed, secret) {
		t.Fatal("the sealed value holds the plaintext")
	}
	if again := s.Seal(secret, []byte("person-1")); bytes.Equal(again, sealed) {
		t.Error("two seals of one value are equal: the nonce is not fresh")
	}
	got, err := s.Open(sealed, []byte("person-1"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := New(key, "key-pairs")
	otherKey, _ := New(bytes.Repeat([]byte{8}, 32), "totp")
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for name, tc := range map[string]struct {
		s      *Sealer
		sealed []byte
		aad    string
	}{
		"another owner":   {s, sealed, "person-2"},
		"another purpose": {other, sealed, "person-1"},
		"another key":     {otherKey, sealed, "person-1"},
		"tampered":        {s, tampered, "person-1"},
		"truncated":       {s, sealed[:10], "person-1"},
		"empty":           {s, nil, "person-1"},
		"unknown version": {s, append([]byte{9}, sealed[1:]...), "person-1"},
	} {
		if _, err := tc.s.Open(tc.sealed, []byte(tc.aad)); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: Open = %v, want ErrOpen", name, err)
		}
	}
	if _, err := New(key[:16], "totp"); err == nil {
		t.Error("a short server key was accepted")
	}
}
