package totp

import (
	"testing"
	"time"
)

// RFC 6238 appendix B (SHA-1 rows), truncated to 6 digits.
func TestRFC6238Vectors(t *testing.T) {
	secret := []byte("12345678901234567890")
	for _, tc := range []struct {
		unix int64
		want string // the 8-digit vector's last 6 digits
	}{
		{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"},
		{1234567890, "005924"}, {2000000000, "279037"}, {20000000000, "353130"},
	} {
		if got := Code(secret, Counter(time.Unix(tc.unix, 0))); got != tc.want {
			t.Errorf("T=%d: %s, want %s", tc.unix, got, tc.want)
		}
	}
}

func TestVerify(t *testing.T) {
	secret := []byte("12345678901234567890")
	now := time.Unix(1111111111, 0)
	c := Counter(now)
	for name, tc := range map[string]struct {
		code string
		ok   bool
		at   uint64
	}{
		"current step":   {Code(secret, c), true, c},
		"previous step":  {Code(secret, c-1), true, c - 1},
		"next step":      {Code(secret, c+1), true, c + 1},
		"two steps back": {Code(secret, c-2), false, 0},
		"wrong":          {"000000", false, 0},
		"too short":      {"12345", false, 0},
		"empty":          {"", false, 0},
	} {
		at, ok := Verify(secret, tc.code, now)
		if ok != tc.ok || at != tc.at {
			t.Errorf("%s: Verify = %d, %v; want %d, %v", name, at, ok, tc.at, tc.ok)
		}
	}
}

func TestDecodeSecret(t *testing.T) {
	for in, ok := range map[string]bool{
		"GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ":        true, // "12345678901234567890"
		"gezd gnbv gy3t qojq gezd gnbv gy3t qojq": true,
		"GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ====":    true,
		"GEZDGNBV":                                false, // 5 bytes
		"not base32!":                             false,
		"":                                        false,
	} {
		b, err := DecodeSecret(in)
		if (err == nil) != ok {
			t.Errorf("%q: %v, %v", in, b, err)
		}
		if ok && string(b) != "12345678901234567890" {
			t.Errorf("%q decoded to %q", in, b)
		}
	}
}

func FuzzDecodeSecret(f *testing.F) {
	f.Add("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")
	f.Add("=== ")
	f.Fuzz(func(t *testing.T, s string) {
		if b, err := DecodeSecret(s); err == nil && (len(b) < 10 || len(b) > 128) {
			t.Fatalf("accepted %d bytes", len(b))
		}
	})
}
