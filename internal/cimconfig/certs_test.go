package cimconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey is a private key with its public key in every form public_key
// may take, each base64 as the API carries it.
type testKey struct {
	keyType          string
	private          string // PKCS #8 DER
	certDER, certPEM string
	spkiDER, spkiPEM string
	privatePEM       string
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// truncated is base64 of the first half of base64's bytes.
func truncated(s string) string {
	b, _ := base64.StdEncoding.DecodeString(s)
	return b64(b[:len(b)/2])
}

func newTestKey(t testing.TB, kind string) testKey {
	t.Helper()
	var key crypto.Signer
	var err error
	typ := KeyTypeCertificateEC
	if kind == "rsa" {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
		typ = KeyTypeCertificateRSA
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Fixed validity: the parser does not look at dates.
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "latchkey test"},
		NotBefore: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)}
	cert, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{
		keyType: typ,
		private: b64(priv),
		certDER: b64(cert),
		certPEM: b64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})),
		spkiDER: b64(spki),
		spkiPEM: b64(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki})),
		// A private key where the public key belongs.
		privatePEM: b64(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv})),
	}
}

// publicKeyCase is one public_key for a pair whose private key is mine;
// detail "" means the pair is accepted.
type publicKeyCase struct {
	name      string
	publicKey func(mine, other, otherAlg testKey) string
	keyType   string // "" is the private key's own type
	detail    string
}

var publicKeyCases = []publicKeyCase{
	{"certificate DER is accepted", func(m, _, _ testKey) string { return m.certDER }, "", ""},
	{"certificate PEM is accepted", func(m, _, _ testKey) string { return m.certPEM }, "", ""},
	{"SPKI PEM is accepted", func(m, _, _ testKey) string { return m.spkiPEM }, "", ""},
	{"SPKI DER is accepted", func(m, _, _ testKey) string { return m.spkiDER }, "", ""},
	{"SPKI PEM with surrounding white space is accepted", func(m, _, _ testKey) string { return " " + m.spkiPEM + "\n" }, "", ""},
	{"SPKI of another key is refused", func(_, o, _ testKey) string { return o.spkiPEM }, "", "does not belong to public_key"},
	{"SPKI DER of another key is refused", func(_, o, _ testKey) string { return o.spkiDER }, "", "does not belong to public_key"},
	{"SPKI of another algorithm is refused", func(_, _, a testKey) string { return a.spkiPEM }, "", "does not belong to public_key"},
	{"certificate of another key is refused", func(_, o, _ testKey) string { return o.certDER }, "", "does not belong to public_key"},
	{"garbage is refused", func(_, _, _ testKey) string { return b64([]byte("hello, world")) }, "", "public_key: is neither an X.509 certificate nor a public key"},
	{"truncated SPKI is refused", func(m, _, _ testKey) string { return truncated(m.spkiDER) }, "", "public_key: is neither"},
	{"not base64 is refused", func(_, _, _ testKey) string { return "***" }, "", "public_key: is not base64"},
	{"empty is refused", func(_, _, _ testKey) string { return "" }, "", "public_key: is required"},
	{"a private key PEM is refused", func(m, _, _ testKey) string { return m.privatePEM }, "", "public_key: holds a PEM block that is neither CERTIFICATE nor PUBLIC KEY"},
	{"a PUBLIC KEY block of garbage is refused", func(_, _, _ testKey) string {
		return b64(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("nope")}))
	}, "", "public_key: holds a PUBLIC KEY block that is not a SubjectPublicKeyInfo"},
	{"oversized is refused before parsing", func(m, _, _ testKey) string { return m.certPEM + strings.Repeat("A", maxKeyMaterial) }, "", "public_key: is longer than"},
	{"a bare public key is not a peer certificate", func(m, _, _ testKey) string { return m.spkiPEM }, KeyTypeCertificate, "public_key: must be an X.509 certificate for key type CERTIFICATE"},
}

var (
	testKeysOnce sync.Once
	testKeys     map[string]testKey // rsa, rsa2, ec, ec2
)

// keys makes the test keys once: RSA generation is slow under -race.
func keys(t testing.TB) map[string]testKey {
	testKeysOnce.Do(func() {
		testKeys = map[string]testKey{}
		for _, k := range []string{"rsa", "rsa2", "ec", "ec2"} {
			testKeys[k] = newTestKey(t, strings.TrimSuffix(k, "2"))
		}
	})
	return testKeys
}

func TestValidateKeyPairPublicKeyForms(t *testing.T) {
	ks := keys(t)
	for _, kind := range []string{"rsa", "ec"} {
		otherAlg := map[string]string{"rsa": "ec", "ec": "rsa"}[kind]
		mine, other, alg := ks[kind], ks[kind+"2"], ks[otherAlg]
		for _, c := range publicKeyCases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				k := KeyPair{Name: "k", KeyType: mine.keyType, PrivateKey: mine.private, PublicKey: c.publicKey(mine, other, alg)}
				if c.keyType != "" {
					k.KeyType, k.PrivateKey = c.keyType, ""
				}
				var p problems
				der := validateKeyPair(k, &p, "key_pair")
				got := strings.Join(p, "\n")
				switch {
				case c.detail == "" && (len(p) > 0 || der == nil):
					t.Errorf("refused: %s", got)
				case c.detail != "" && (der != nil || !strings.Contains(got, c.detail)):
					t.Errorf("problems %q, want one naming %q", got, c.detail)
				}
			})
		}
	}
}

// FuzzParsePublicKey: no input makes the parser panic, and what it accepts
// is a key that survives SPKI encoding unchanged.
func FuzzParsePublicKey(f *testing.F) {
	ks := keys(f)
	for _, c := range publicKeyCases {
		if !strings.HasPrefix(c.name, "oversized") {
			f.Add(c.publicKey(ks["rsa"], ks["rsa2"], ks["ec"]))
			f.Add(c.publicKey(ks["ec"], ks["ec2"], ks["rsa"]))
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		pub, cert, err := parsePublicKey(in)
		if err != nil {
			if pub != nil || cert != nil {
				t.Fatalf("an error with a key: %v", err)
			}
			return
		}
		if cert != nil && cert.PublicKey != pub {
			t.Fatal("the key is not the certificate's")
		}
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatalf("an accepted key does not marshal: %v", err)
		}
		back, err := x509.ParsePKIXPublicKey(der)
		type equaler interface{ Equal(crypto.PublicKey) bool }
		if e, ok := pub.(equaler); err != nil || !ok || !e.Equal(back) {
			t.Fatalf("an accepted %T changes in an SPKI round trip (%v)", pub, err)
		}
	})
}
