package clientauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/store"
)

// Algorithms accepted for client assertions: asymmetric only, so "none" and
// the HMAC family (which would need a shared secret) are refused at parse time.
var Algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

const (
	maxAssertionBytes = 8 << 10
	clockLeeway       = 30 * time.Second
	jwksCacheFor      = 5 * time.Minute
	maxJWKSBytes      = 64 << 10
)

// errKeysDescription is the one answer of an assertion that the client's
// keys do not verify, whatever the reason.
const errKeysDescription = "The client assertion does not verify with the client's keys."

// defaultOutbound fetches jwks_uri when the Authenticator has no guard of
// its own: no exceptions, the jwks size bound.
var defaultOutbound = outbound.MustNew(outbound.Options{MaxBytes: maxJWKSBytes})

// operatorOutbound fetches the jwks_uri of the config file's clients: any
// address, http too (the operator's choice), still without redirects and
// with the bounds.
var operatorOutbound = outbound.MustNew(outbound.Options{Operator: true, MaxBytes: maxJWKSBytes})

type cachedJWKS struct {
	set     jose.JSONWebKeySet
	fetched time.Time
}

// checkAssertion verifies a private_key_jwt assertion (RFC 7523 section 3).
func (a *Authenticator) checkAssertion(ctx context.Context, assertion, formID, endpoint string) (store.Client, error) {
	fail := func(desc string, cause error) error { return invalidClient(desc, false, cause) }
	if len(assertion) > maxAssertionBytes {
		return store.Client{}, fail("The client assertion is too large.", nil)
	}
	tok, err := jwt.ParseSigned(assertion, Algorithms)
	if err != nil {
		return store.Client{}, fail("The client assertion is not a JWT signed with an accepted algorithm.", err)
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return store.Client{}, fail("The client assertion's claims cannot be read.", err)
	}
	if unverified.Subject == "" || unverified.Issuer != unverified.Subject {
		return store.Client{}, fail("The client assertion's iss and sub must both be the client id.", nil)
	}
	if formID != "" && formID != unverified.Subject {
		return store.Client{}, fail("The client_id parameter does not match the client assertion.", nil)
	}
	c, err := a.lookup(ctx, unverified.Subject)
	if err != nil {
		return store.Client{}, err
	}
	if Method(c.TokenEndpointAuthMethod) != MethodPrivateKey {
		return store.Client{}, fail(errAuthFailed, fmt.Errorf("client registered for %s sent an assertion", c.TokenEndpointAuthMethod))
	}
	// One description whether the keys could not be had or did not
	// verify: the answer must not tell what a registered jwks_uri
	// answered (an open port, a closed one, a page that is not a key set).
	keys, err := a.keys(ctx, c)
	if err != nil {
		return store.Client{}, fail(errKeysDescription, err)
	}
	var claims jwt.Claims
	if err := verifyWithKeys(tok, keys, &claims); err != nil {
		return store.Client{}, fail(errKeysDescription, err)
	}
	now := a.now()
	maxLife := a.MaxAssertionLifetime
	if maxLife <= 0 {
		maxLife = 5 * time.Minute
	}
	switch {
	case claims.Expiry == nil:
		return store.Client{}, fail("The client assertion has no exp claim.", nil)
	case now.After(claims.Expiry.Time().Add(clockLeeway)):
		return store.Client{}, fail("The client assertion has expired.", nil)
	case claims.Expiry.Time().After(now.Add(maxLife + clockLeeway)):
		return store.Client{}, fail("The client assertion's exp is too far in the future.", nil)
	case claims.NotBefore != nil && claims.NotBefore.Time().After(now.Add(clockLeeway)):
		return store.Client{}, fail("The client assertion is not valid yet.", nil)
	case claims.IssuedAt != nil && claims.IssuedAt.Time().After(now.Add(clockLeeway)):
		return store.Client{}, fail("The client assertion was issued in the future.", nil)
	case claims.ID == "" || len(claims.ID) > 255:
		return store.Client{}, fail("The client assertion has no usable jti claim.", nil)
	}
	if !slices.ContainsFunc([]string(claims.Audience), func(aud string) bool {
		return aud == a.Issuer || aud == endpoint || aud == a.Issuer+"/"
	}) {
		return store.Client{}, fail("The client assertion's aud must name this server.", nil)
	}
	// Remember the jti until the assertion expires: a replay is refused by every instance.
	err = a.Assertions.UseAssertionID(ctx, c.ID, claims.ID, claims.Expiry.Time().Add(clockLeeway), now)
	if errors.Is(err, store.ErrConflict) {
		return store.Client{}, fail("The client assertion was already used.", nil)
	}
	if err != nil {
		return store.Client{}, err
	}
	return c, nil
}

// verifyWithKeys verifies tok with the key named by its kid, or else with
// each key in turn.
func verifyWithKeys(tok *jwt.JSONWebToken, set jose.JSONWebKeySet, claims *jwt.Claims) error {
	kid := ""
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	candidates := set.Keys
	if kid != "" {
		candidates = set.Key(kid)
	}
	var last error = errors.New("no matching key")
	for _, k := range candidates {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if err := tok.Claims(k.Public().Key, claims); err != nil {
			last = err
			continue
		}
		return nil
	}
	return last
}

// keys returns the client's public keys: inline jwks, or jwks_uri fetched
// and cached for a few minutes.
func (a *Authenticator) keys(ctx context.Context, c store.Client) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if len(c.JWKS) > 0 {
		err := json.Unmarshal(c.JWKS, &set)
		return set, err
	}
	if c.JWKSURI == "" {
		return set, errors.New("client has no keys")
	}
	operator := a.Operator != nil && a.Operator(c.ID)
	// Keyed by who set the URI too: a registrant naming the operator's
	// internal jwks_uri must not be served its cached answer.
	cacheKey := c.JWKSURI
	if operator {
		cacheKey = "operator " + cacheKey
	}
	a.jwksMu.Lock()
	cached, ok := a.jwksCache[cacheKey]
	a.jwksMu.Unlock()
	if ok && a.now().Sub(cached.fetched) < jwksCacheFor {
		return cached.set, nil
	}
	set, err := a.fetchJWKS(ctx, c.JWKSURI, operator)
	if err != nil {
		return set, err
	}
	a.jwksMu.Lock()
	if a.jwksCache == nil {
		a.jwksCache = map[string]cachedJWKS{}
	}
	a.jwksCache[cacheKey] = cachedJWKS{set: set, fetched: a.now()}
	a.jwksMu.Unlock()
	return set, nil
}

// fetchJWKS fetches a client's jwks_uri: a registered one through the
// outbound guard (https only, no internal address, no redirect, bounded),
// a config file client's (operator) anywhere, still bounded and without
// redirects. The cause of a failure is for the log.
func (a *Authenticator) fetchJWKS(ctx context.Context, uri string, operator bool) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	ob := a.Outbound
	switch {
	case operator:
		ob = operatorOutbound
	case ob == nil:
		ob = defaultOutbound
	}
	b, err := ob.Get(ctx, uri, "application/json")
	if err != nil {
		return set, fmt.Errorf("jwks_uri: %w (%v)", err, outbound.Cause(err))
	}
	if len(b) > maxJWKSBytes {
		return set, errors.New("jwks_uri: key set too large")
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return set, fmt.Errorf("jwks_uri: not a key set: %w", err)
	}
	return set, nil
}
