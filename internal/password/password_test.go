package password

import (
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func phcPBKDF2(t *testing.T, prf string, pw string, iter int) string {
	t.Helper()
	salt := []byte("0123456789abcdef")
	h := sha256.New
	if prf == "sha512" {
		h = sha512.New
	}
	key, err := pbkdf2.Key(h, pw, salt, iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("$pbkdf2-%s$i=%d,l=32$%s$%s", prf, iter, b64.EncodeToString(salt), b64.EncodeToString(key))
}

func TestHashAndVerify(t *testing.T) {
	h, err := Hash("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("hash %q is not the expected argon2id PHC string", h)
	}
	h2, _ := Hash("correct horse")
	if h == h2 {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	if NeedsRehash(h) {
		t.Error("a fresh hash needs no rehash")
	}
	bc, err := bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for name, phc := range map[string]string{
		"argon2id":      h,
		"bcrypt":        string(bc),
		"pbkdf2-sha256": phcPBKDF2(t, "sha256", "correct horse", 1000),
		"pbkdf2-sha512": phcPBKDF2(t, "sha512", "correct horse", 1000),
	} {
		t.Run(name, func(t *testing.T) {
			if ok, err := Verify(phc, "correct horse"); !ok || err != nil {
				t.Errorf("right password: %v, %v", ok, err)
			}
			if ok, err := Verify(phc, "wrong horse"); ok || err != nil {
				t.Errorf("wrong password: %v, %v", ok, err)
			}
			if name != "argon2id" && !NeedsRehash(phc) {
				t.Error("a non-argon2id hash needs a rehash")
			}
		})
	}
}

func TestVerifyMalformed(t *testing.T) {
	for name, phc := range map[string]string{
		"empty":                    "",
		"plain text":               "hunter2",
		"unknown algorithm":        "$scrypt$ln=16,r=8,p=1$c2FsdA$aGFzaA",
		"argon2i":                  "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"argon2id absurd memory":   "$argon2id$v=19$m=99999999,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"argon2id absurd time":     "$argon2id$v=19$m=1024,t=9999,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"argon2id zero threads":    "$argon2id$v=19$m=1024,t=1,p=0$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"argon2id bad base64":      "$argon2id$v=19$m=1024,t=1,p=1$!!!$aGFzaGhhc2hoYXNoaGFzaA",
		"argon2id missing part":    "$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ",
		"argon2id old version":     "$argon2id$v=16$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"bcrypt truncated":         "$2b$10$abc",
		"pbkdf2 absurd iterations": "$pbkdf2-sha256$i=999999999$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
		"pbkdf2 unknown prf":       "$pbkdf2-md5$i=1000$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
		"pbkdf2 no iterations":     "$pbkdf2-sha256$$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",
	} {
		t.Run(name, func(t *testing.T) {
			ok, err := Verify(phc, "x")
			if ok || err == nil {
				t.Errorf("Verify = %v, %v; want false and an error", ok, err)
			}
			if err != nil && phc != "" && strings.Contains(err.Error(), phc) {
				t.Error("the error repeats the hash")
			}
		})
	}
}

func TestVerifyPBKDF2Raw(t *testing.T) {
	salt := []byte("salt-salt-salt")
	digest, _ := pbkdf2.Key(sha256.New, "pw", salt, 10000, 32)
	if ok, err := VerifyPBKDF2("sha256", digest, salt, 10000, "pw"); !ok || err != nil {
		t.Errorf("right password: %v %v", ok, err)
	}
	if ok, _ := VerifyPBKDF2("sha256", digest, salt, 10001, "pw"); ok {
		t.Error("wrong iteration count accepted")
	}
	if _, err := VerifyPBKDF2("sha256", digest, nil, 10000, "pw"); err == nil {
		t.Error("empty salt accepted")
	}
}

func FuzzVerify(f *testing.F) {
	for _, s := range []string{"$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "$2b$04$abc",
		"$pbkdf2-sha256$i=1000$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA", "$", "$$$$$"} {
		f.Add(s, "pw")
	}
	f.Fuzz(func(t *testing.T, phc, pw string) {
		if strings.Contains(phc, "m=") && !strings.Contains(phc, "m=1024") {
			return // keep fuzzing fast: do not hash with large memory parameters
		}
		_, _ = Verify(phc, pw) // must not panic
	})
}

func TestPBKDF2PHC(t *testing.T) {
	salt := []byte("a salt of sixteen")
	for _, prf := range []string{"sha256", "sha512", "sha1"} {
		h := map[string]func() hash.Hash{"sha256": sha256.New, "sha512": sha512.New, "sha1": sha1.New}[prf]
		digest, err := pbkdf2.Key(h, "correct horse", salt, 1000, 32)
		if err != nil {
			t.Fatal(err)
		}
		phc, err := PBKDF2PHC(prf, digest, salt, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := Verify(phc, "correct horse"); !ok || err != nil {
			t.Errorf("%s: Verify(right) = %v, %v (%s)", prf, ok, err, phc)
		}
		if ok, _ := Verify(phc, "wrong horse"); ok {
			t.Errorf("%s: wrong password accepted", prf)
		}
		if !NeedsRehash(phc) {
			t.Errorf("%s: an imported PBKDF2 hash must be upgraded at login", prf)
		}
	}
	digest := make([]byte, 32)
	for name, tc := range map[string]struct {
		prf          string
		digest, salt []byte
		iter         int
	}{
		"unknown prf":      {"md5", digest, salt, 1000},
		"zero iterations":  {"sha256", digest, salt, 0},
		"too many":         {"sha256", digest, salt, maxPBKDF2Iter + 1},
		"short digest":     {"sha256", digest[:15], salt, 1000},
		"long digest":      {"sha256", make([]byte, maxKeyLen+1), salt, 1000},
		"no salt":          {"sha256", digest, nil, 1000},
		"negative counter": {"sha256", digest, salt, -1},
	} {
		if _, err := PBKDF2PHC(tc.prf, tc.digest, tc.salt, tc.iter); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTimingDummyHasHashParameters(t *testing.T) {
	p, ok := parseArgon2id(TimingDummy)
	if !ok {
		t.Fatal("TimingDummy does not parse")
	}
	fresh, err := Hash("x")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := parseArgon2id(fresh)
	if p.memory != q.memory || p.time != q.time || p.threads != q.threads || len(p.key) != len(q.key) || len(p.salt) != len(q.salt) {
		t.Fatalf("TimingDummy %+v, Hash %+v: a verification against it would not cost what a real one costs", p, q)
	}
	if NeedsRehash(TimingDummy) {
		t.Fatal("TimingDummy needs a rehash")
	}
}
