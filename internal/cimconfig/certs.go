package cimconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Key types of key pairs: a certificate (or the bare public key) with its
// RSA or EC private key, or a certificate alone (a trusted peer's).
const (
	KeyTypeCertificateRSA = "CERTIFICATE_RSA_PRIVATE_KEY"
	KeyTypeCertificateEC  = "CERTIFICATE_EC_PRIVATE_KEY"
	KeyTypeCertificate    = "CERTIFICATE"
)

var keyTypes = []string{KeyTypeCertificateRSA, KeyTypeCertificateEC, KeyTypeCertificate}

const maxKeyPairName = 200

// storedKeyPair is a key pair at rest: the private key sealed with a key
// derived from the server key (the pair's id is the associated data).
type storedKeyPair struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	KeyType       string `json:"key_type"`
	PublicKey     string `json:"public_key"`
	SealedPrivate []byte `json:"sealed_private_key,omitempty"`
}

func (s storedKeyPair) public() KeyPair {
	return KeyPair{ID: s.ID, Name: s.Name, KeyType: s.KeyType, PublicKey: s.PublicKey}
}

// maxKeyMaterial bounds public_key and private_key (base64 characters) so
// that a batch of pairs cannot make the parsers chew on megabytes: a
// certificate of a 16384-bit RSA key is under 8 KiB of base64 PEM.
const maxKeyMaterial = 32 << 10

// decodeKeyMaterial reads base64 of DER, or base64 of PEM text (the form
// people copy from files), returning DER and the PEM block's type ("" for DER).
func decodeKeyMaterial(b64 string) (der []byte, pemType string, err error) {
	if len(b64) > maxKeyMaterial {
		return nil, "", fmt.Errorf("is longer than %d characters", maxKeyMaterial)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, "", errors.New("is not base64")
	}
	if blk, _ := pem.Decode(raw); blk != nil {
		return blk.Bytes, blk.Type, nil
	}
	return raw, "", nil
}

// parsePublicKey reads public_key: base64 of an X.509 certificate or of a
// bare public key (SubjectPublicKeyInfo), each as DER or as PEM text
// ("CERTIFICATE", "PUBLIC KEY"). cert is nil for a bare key. Only RSA, EC
// and Ed25519 keys are accepted: the kinds the service can use.
func parsePublicKey(b64 string) (pub crypto.PublicKey, cert *x509.Certificate, err error) {
	if strings.TrimSpace(b64) == "" {
		return nil, nil, errors.New("is required")
	}
	der, pemType, err := decodeKeyMaterial(b64)
	if err != nil {
		return nil, nil, err
	}
	switch pemType {
	case "CERTIFICATE":
		if cert, err = x509.ParseCertificate(der); err != nil {
			return nil, nil, errors.New("holds a CERTIFICATE block that is not an X.509 certificate")
		}
		pub = cert.PublicKey
	case "PUBLIC KEY":
		if pub, err = x509.ParsePKIXPublicKey(der); err != nil {
			return nil, nil, errors.New("holds a PUBLIC KEY block that is not a SubjectPublicKeyInfo")
		}
	case "":
		if cert, err = x509.ParseCertificate(der); err == nil {
			pub = cert.PublicKey
		} else if pub, err = x509.ParsePKIXPublicKey(der); err != nil {
			return nil, nil, errors.New("is neither an X.509 certificate nor a public key (SubjectPublicKeyInfo)")
		}
	default:
		return nil, nil, errors.New("holds a PEM block that is neither CERTIFICATE nor PUBLIC KEY")
	}
	switch pub.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return pub, cert, nil
	}
	return nil, nil, errors.New("holds a key of an unsupported algorithm (RSA, EC or Ed25519 only)")
}

func parsePrivateKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("is not a PKCS #8, PKCS #1 or SEC 1 private key")
}

// validateKeyPair checks a key pair and returns the private key's DER ("" for none).
func validateKeyPair(k KeyPair, p *problems, path string) []byte {
	n := len(*p)
	if k.Name == "" || len(k.Name) > maxKeyPairName {
		p.add(path+".name", "is required (at most %d characters)", maxKeyPairName)
	}
	if !slices.Contains(keyTypes, k.KeyType) {
		p.add(path+".key_type", "must be one of %s", strings.Join(keyTypes, ", "))
		return nil
	}
	pub, cert, err := parsePublicKey(k.PublicKey)
	if err != nil {
		p.add(path+".public_key", "%v", err)
		return nil
	}
	if k.KeyType == KeyTypeCertificate {
		// A peer's pair is its certificate: a bare key names no one.
		if cert == nil {
			p.add(path+".public_key", "must be an X.509 certificate for key type %s", KeyTypeCertificate)
		}
		if k.PrivateKey != "" {
			p.add(path+".private_key", "must be absent for key type %s", KeyTypeCertificate)
		}
		return nil
	}
	if k.PrivateKey == "" {
		p.add(path+".private_key", "is required for key type %s", k.KeyType)
		return nil
	}
	keyDER, _, err := decodeKeyMaterial(k.PrivateKey)
	if err != nil {
		p.add(path+".private_key", "%v", err)
		return nil
	}
	key, err := parsePrivateKey(keyDER)
	if err != nil {
		p.add(path+".private_key", "%v", err)
		return nil
	}
	switch key.(type) {
	case *rsa.PrivateKey:
		if k.KeyType != KeyTypeCertificateRSA {
			p.add(path+".private_key", "is an RSA key, the key type says %s", k.KeyType)
		}
	case *ecdsa.PrivateKey:
		if k.KeyType != KeyTypeCertificateEC {
			p.add(path+".private_key", "is an EC key, the key type says %s", k.KeyType)
		}
	case ed25519.PrivateKey:
		p.add(path+".private_key", "Ed25519 keys are not supported")
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if own, ok := key.Public().(equaler); !ok || !own.Equal(pub) {
		p.add(path, "the private key does not belong to public_key")
	}
	if len(*p) != n {
		return nil
	}
	// Store the private key in one canonical form.
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.add(path+".private_key", "cannot be stored: %v", err)
		return nil
	}
	return der
}

func keyPairPath(i int) string { return fmt.Sprintf("key_pairs[%d]", i) }
