package cimconfig

import (
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"strings"
)

// The write-only secrets of the login methods: an OpenID Connect method's
// client_secret and an LDAP method's bind password. They are sealed with a
// key of their own (Service.Secrets) bound to the method's id and the
// member, kept in the stored unit only in that form, and never answered:
// GET answers the unit without them.

// ErrNoSecrets: a secret was sent but the service has no sealer for them.
var ErrNoSecrets = errors.New("cimconfig: no sealer for login method secrets")

func secretAAD(methodID, member string) []byte {
	return []byte(strings.ToLower(methodID) + "|" + member)
}

// sealSecrets seals the secrets sent in snap's login methods; a method
// whose update leaves a secret out keeps the one stored for the same id
// in old ("" removes it).
func (s *Service) sealSecrets(old, snap *Snapshot) error {
	if snap.LoginMethods == nil {
		return nil
	}
	prev := map[string]*LoginMethod{}
	if old.LoginMethods != nil {
		for i := range old.LoginMethods.LoginMethods {
			if m := &old.LoginMethods.LoginMethods[i]; m.ID != nil {
				prev[strings.ToLower(*m.ID)] = m
			}
		}
	}
	for i := range snap.LoginMethods.LoginMethods {
		m := &snap.LoginMethods.LoginMethods[i]
		if m.ID == nil {
			continue
		}
		was := prev[strings.ToLower(*m.ID)]
		if a := m.OpenIDConnectAttributes; a != nil {
			var kept []byte
			if was != nil && was.OpenIDConnectAttributes != nil {
				kept = was.OpenIDConnectAttributes.SealedClientSecret
			}
			sealed, err := s.sealOne(*m.ID, "client_secret", a.ClientSecret, kept)
			if err != nil {
				return err
			}
			a.ClientSecret, a.SealedClientSecret = nil, sealed
		}
		if a := m.LDAPAttributes; a != nil {
			var kept []byte
			if was != nil && was.LDAPAttributes != nil {
				kept = was.LDAPAttributes.SealedPassword
			}
			sealed, err := s.sealOne(*m.ID, "password", a.Password, kept)
			if err != nil {
				return err
			}
			a.Password, a.SealedPassword = nil, sealed
		}
	}
	return nil
}

func (s *Service) sealOne(id, member string, sent *string, kept []byte) ([]byte, error) {
	switch {
	case sent == nil:
		return kept, nil
	case *sent == "":
		return nil, nil
	case s.Secrets == nil:
		return nil, ErrNoSecrets
	}
	return s.Secrets.Seal([]byte(*sent), secretAAD(id, member)), nil
}

// publicLoginMethods is the unit as answered: a deep copy without the secrets.
func publicLoginMethods(l *LoginMethodsConfiguration) *LoginMethodsConfiguration {
	if l == nil {
		return nil
	}
	var out LoginMethodsConfiguration
	b, _ := json.Marshal(l)
	_ = json.Unmarshal(b, &out)
	for i := range out.LoginMethods {
		m := &out.LoginMethods[i]
		if a := m.OpenIDConnectAttributes; a != nil {
			a.ClientSecret, a.SealedClientSecret = nil, nil
		}
		if a := m.LDAPAttributes; a != nil {
			a.Password, a.SealedPassword = nil, nil
		}
	}
	return &out
}

// LoginMethod returns the login method with id (compared as the import API
// compares identity provider ids: case-insensitively), or false.
func (snap *Snapshot) LoginMethod(id string) (LoginMethod, bool) {
	if snap.LoginMethods == nil || id == "" {
		return LoginMethod{}, false
	}
	for _, m := range snap.LoginMethods.LoginMethods {
		if m.ID != nil && strings.EqualFold(*m.ID, id) {
			return m, true
		}
	}
	return LoginMethod{}, false
}

// ClientSecret opens an OpenID Connect method's client secret ("" when none).
func (s *Service) ClientSecret(m LoginMethod) (string, error) {
	a := m.OpenIDConnectAttributes
	if a == nil || a.SealedClientSecret == nil || m.ID == nil {
		return "", nil
	}
	return s.openSecret(*m.ID, "client_secret", a.SealedClientSecret)
}

// BindPassword opens an LDAP method's bind password ("" when none).
func (s *Service) BindPassword(m LoginMethod) (string, error) {
	a := m.LDAPAttributes
	if a == nil || a.SealedPassword == nil || m.ID == nil {
		return "", nil
	}
	return s.openSecret(*m.ID, "password", a.SealedPassword)
}

func (s *Service) openSecret(id, member string, sealed []byte) (string, error) {
	if s.Secrets == nil {
		return "", ErrNoSecrets
	}
	b, err := s.Secrets.Open(sealed, secretAAD(id, member))
	return string(b), err
}

// Signer returns the private key of a key pair of the certificates API
// (PRIVATE_KEY_JWT client assertions); ErrNotFound when the pair is
// unknown or has no private key.
func (s *Service) Signer(snap *Snapshot, keyPairID string) (crypto.Signer, error) {
	der, err := s.PrivateKey(snap, keyPairID)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, ErrNotFound
	}
	return signer, nil
}
