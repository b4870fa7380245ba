package config

import (
	"fmt"
	"time"
)

// OIDC configures OpenID Connect: ID tokens, and the keys that sign them
// and JWT access tokens (internal/signing).
type OIDC struct {
	// SigningAlgorithm is the algorithm of new signing keys: RS256
	// (default: every OpenID Connect client supports it), ES256 or EdDSA.
	// A change rotates to a key of the new algorithm, published ahead.
	SigningAlgorithm string `yaml:"signing_algorithm"`
	// IDTokenLifetime is how long an ID token is valid (default 1h).
	IDTokenLifetime Duration `yaml:"id_token_lifetime"`
	// KeyRotationPeriod is how long a key signs before the next one does
	// (default 2160h, 90 days).
	KeyRotationPeriod Duration `yaml:"key_rotation_period"`
	// KeyPublishAhead is how long a new key is in the JWKS before it signs
	// (default 24h): longer than relying parties cache the JWKS.
	KeyPublishAhead Duration `yaml:"key_publish_ahead"`
	// MaxSignedLifetime bounds the lifetime of everything a key signs: a
	// retired key stays in the JWKS that long after it stopped signing.
	// Default: the longest of id_token_lifetime and the clients'
	// access_token_lifetime.
	MaxSignedLifetime Duration `yaml:"max_signed_lifetime"`
}

// OIDC signing algorithms.
var oidcAlgorithms = []string{"RS256", "ES256", "EdDSA"}

func (o *OIDC) fillDefaults(clients []Client, unset func(key string, d Duration) bool) {
	if o.SigningAlgorithm == "" {
		o.SigningAlgorithm = "RS256"
	}
	if unset("oidc.id_token_lifetime", o.IDTokenLifetime) {
		o.IDTokenLifetime = Duration(time.Hour)
	}
	if unset("oidc.key_rotation_period", o.KeyRotationPeriod) {
		o.KeyRotationPeriod = Duration(90 * 24 * time.Hour)
	}
	if unset("oidc.key_publish_ahead", o.KeyPublishAhead) {
		o.KeyPublishAhead = Duration(24 * time.Hour)
	}
	if unset("oidc.max_signed_lifetime", o.MaxSignedLifetime) {
		o.MaxSignedLifetime = max(o.IDTokenLifetime, Duration(DefaultAccessTokenLifetime))
		for _, cl := range clients {
			o.MaxSignedLifetime = max(o.MaxSignedLifetime, cl.AccessTokenLifetime)
		}
	}
}

func (o *OIDC) validate() error {
	ok := false
	for _, a := range oidcAlgorithms {
		ok = ok || o.SigningAlgorithm == a
	}
	if !ok {
		return fmt.Errorf("oidc.signing_algorithm: %q is not one of RS256, ES256, EdDSA", o.SigningAlgorithm)
	}
	d := func(v Duration) time.Duration { return time.Duration(v) }
	if d(o.IDTokenLifetime) < time.Minute || d(o.IDTokenLifetime) > 24*time.Hour {
		return fmt.Errorf("oidc.id_token_lifetime: %v is not between 1m and 24h", d(o.IDTokenLifetime))
	}
	// Instances read the keys again every 30 s at most; a new key must
	// reach every instance, and every relying party's cached JWKS, before
	// it signs. 0s (set explicitly) lets a new key sign at once: for an
	// emergency, or a deployment whose verifiers fetch the JWKS on an
	// unknown kid (docs/OIDC.md).
	if p := d(o.KeyPublishAhead); p < 0 || p > 0 && p < time.Minute {
		return fmt.Errorf("oidc.key_publish_ahead: %v is neither 0s nor at least 1m", p)
	}
	if o.KeyRotationPeriod <= o.KeyPublishAhead {
		return fmt.Errorf("oidc.key_rotation_period: %v must be longer than key_publish_ahead (%v)",
			d(o.KeyRotationPeriod), d(o.KeyPublishAhead))
	}
	if o.MaxSignedLifetime < o.IDTokenLifetime || d(o.MaxSignedLifetime) > 365*24*time.Hour {
		return fmt.Errorf("oidc.max_signed_lifetime: %v must be at least id_token_lifetime (%v) and at most 365d",
			d(o.MaxSignedLifetime), d(o.IDTokenLifetime))
	}
	return nil
}
