// Package password hashes passwords with argon2id in PHC string format and
// verifies PHC strings of argon2id, bcrypt and PBKDF2 (imported or
// operator-supplied hashes).
package password

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/gcpace"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Argon2id parameters: OWASP's first recommendation (m=19 MiB, t=2, p=1),
// which keeps a login well under 100 ms on a small server.
const (
	argonMemory  = 19 * 1024
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	saltLen      = 16
)

// Bounds on parameters read from a hash: a hostile or mistaken config must
// not make one verification take minutes or gigabytes.
const (
	maxArgonMemory = 1 << 20 // KiB: 1 GiB
	maxArgonTime   = 16
	maxArgonPar    = 16
	maxPBKDF2Iter  = 5_000_000
	maxKeyLen      = 128
)

// TimingDummy is an argon2id hash of Hash's parameters that stands in for
// the hash of an unknown account: verifying a password against it costs
// what a real verification costs, so a wrong name answers as slowly as a
// wrong password. It is a constant (of a throw-away password) rather than
// hashed at start-up, which took a third of the time to ready.
// TestTimingDummyHasHashParameters keeps it in step with Hash.
const TimingDummy = "$argon2id$v=19$m=19456,t=2,p=1$W0I2sKZVrO6xcpBi47+NEQ$pmabrC4BVKHtS4i8NuOmhkEq/5ETXRUI2gQ0Fj7Ii6s"

// ErrMalformed: the hash is not a PHC string this package understands.
var ErrMalformed = errors.New("password: malformed or unsupported hash")

var b64 = base64.RawStdEncoding

// Hash returns the argon2id PHC string of pw.
func Hash(pw string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	end := gcpace.Transient()
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	end()
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether pw matches the PHC string phc. The error is
// ErrMalformed for a hash it cannot read; it never holds the password or hash.
func Verify(phc, pw string) (bool, error) {
	switch {
	case strings.HasPrefix(phc, "$argon2id$"):
		return verifyArgon2id(phc, pw)
	case strings.HasPrefix(phc, "$2a$"), strings.HasPrefix(phc, "$2b$"), strings.HasPrefix(phc, "$2y$"):
		err := bcrypt.CompareHashAndPassword([]byte(phc), []byte(pw))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
			return false, nil
		default:
			return false, ErrMalformed
		}
	case strings.HasPrefix(phc, "$pbkdf2-"):
		return verifyPBKDF2PHC(phc, pw)
	default:
		return false, ErrMalformed
	}
}

// NeedsRehash reports whether phc should be replaced by Hash's output at the
// next successful login (another algorithm, or weaker argon2id parameters).
func NeedsRehash(phc string) bool {
	p, ok := parseArgon2id(phc)
	return !ok || p.memory < argonMemory || p.time < argonTime || len(p.key) < argonKeyLen
}

type argonParams struct {
	memory    uint32
	time      uint32
	threads   uint8
	salt, key []byte
}

func parseArgon2id(phc string) (argonParams, bool) {
	var p argonParams
	parts := strings.Split(phc, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v=19" {
		return p, false
	}
	var m, t, par uint64
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil {
			return p, false
		}
		switch k {
		case "m":
			m = n
		case "t":
			t = n
		case "p":
			par = n
		default:
			return p, false
		}
	}
	if m == 0 || m > maxArgonMemory || t == 0 || t > maxArgonTime || par == 0 || par > maxArgonPar {
		return p, false
	}
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 || len(key) > maxKeyLen {
		return p, false
	}
	return argonParams{memory: uint32(m), time: uint32(t), threads: uint8(par), salt: salt, key: key}, true
}

func verifyArgon2id(phc, pw string) (bool, error) {
	p, ok := parseArgon2id(phc)
	if !ok {
		return false, ErrMalformed
	}
	end := gcpace.Transient()
	got := argon2.IDKey([]byte(pw), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	end()
	return subtle.ConstantTimeCompare(got, p.key) == 1, nil
}

// verifyPBKDF2PHC reads "$pbkdf2-sha256$i=N[,l=L]$salt$hash" (salt and hash
// in unpadded standard base64; passlib's "adapted" alphabet, which writes '.'
// for '+', is accepted too).
func verifyPBKDF2PHC(phc, pw string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 5 {
		return false, ErrMalformed
	}
	prf := strings.TrimPrefix(parts[1], "pbkdf2-")
	iter := 0
	for _, kv := range strings.Split(parts[2], ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "i" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return false, ErrMalformed
			}
			iter = n
		}
	}
	decode := func(s string) ([]byte, error) { return b64.DecodeString(strings.ReplaceAll(s, ".", "+")) }
	salt, err1 := decode(parts[3])
	digest, err2 := decode(parts[4])
	if err1 != nil || err2 != nil {
		return false, ErrMalformed
	}
	return VerifyPBKDF2(prf, digest, salt, iter, pw)
}

// VerifyPBKDF2 checks pw against a raw PBKDF2 digest (the import API's
// hashed_password). prf is "sha256", "sha512" or "sha1"; the key length is
// the digest's own length.
func VerifyPBKDF2(prf string, digest, salt []byte, iterations int, pw string) (bool, error) {
	var h func() hash.Hash
	switch prf {
	case "sha256":
		h = sha256.New
	case "sha512":
		h = sha512.New
	case "sha1":
		h = sha1.New
	default:
		return false, ErrMalformed
	}
	if iterations <= 0 || iterations > maxPBKDF2Iter || len(digest) < 16 || len(digest) > maxKeyLen || len(salt) == 0 {
		return false, ErrMalformed
	}
	got, err := pbkdf2.Key(h, pw, salt, iterations, len(digest))
	if err != nil {
		return false, ErrMalformed
	}
	return subtle.ConstantTimeCompare(got, digest) == 1, nil
}

// PBKDF2PHC checks the parameters of a raw PBKDF2 hash (the import API's
// hashed_password) and writes it as the PHC string Verify reads. The person's
// first successful login replaces it with argon2id (NeedsRehash).
func PBKDF2PHC(prf string, digest, salt []byte, iterations int) (string, error) {
	switch {
	case prf != "sha256" && prf != "sha512" && prf != "sha1":
		return "", fmt.Errorf("PRF %q is not supported", prf)
	case iterations <= 0 || iterations > maxPBKDF2Iter:
		return "", fmt.Errorf("nr_of_iterations must be between 1 and %d", maxPBKDF2Iter)
	case len(digest) < 16 || len(digest) > maxKeyLen:
		return "", fmt.Errorf("digest must be between 16 and %d bytes", maxKeyLen)
	case len(salt) == 0 || len(salt) > 1024:
		return "", errors.New("salt must be between 1 and 1024 bytes")
	}
	return fmt.Sprintf("$pbkdf2-%s$i=%d,l=%d$%s$%s", prf, iterations, len(digest), b64.EncodeToString(salt), b64.EncodeToString(digest)), nil
}
