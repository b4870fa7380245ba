package federation

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Paths latchkey registers at OpenID Providers: the redirect URI of the
// code flow, and the post-logout redirect URI of their end-session endpoint.
const (
	PathCallback   = "/login/oidc/callback"
	PathLoggedOut  = "/login/oidc/logged-out"
	defaultMetaTTL = time.Hour
	maxMetadata    = 1 << 20
)

// StateToken is the kind of the state values sent upstream.
var StateToken = token.Kind{Prefix: "lk_fs_", Label: "federation_state"}

// metadata is what latchkey uses of an OpenID Provider's metadata (OpenID
// Connect Discovery 1.0 section 3), or the same taken from the manual URLs.
type metadata struct {
	Issuer          string   `json:"issuer"`
	AuthURL         string   `json:"authorization_endpoint"`
	TokenURL        string   `json:"token_endpoint"`
	UserInfoURL     string   `json:"userinfo_endpoint"`
	JWKSURL         string   `json:"jwks_uri"`
	EndSessionURL   string   `json:"end_session_endpoint"`
	Algorithms      []string `json:"id_token_signing_alg_values_supported"`
	ClaimsParameter bool     `json:"claims_parameter_supported"`
}

// provider is a cached upstream: its metadata and go-oidc's provider (which
// keeps the JWKS, refetched when an unknown key id shows up).
type provider struct {
	meta        metadata
	oidc        *oidc.Provider
	algs        []string // the ID token algorithms accepted
	fingerprint string   // the method's attributes it was built from
	until       time.Time
}

func fingerprint(m Method) string {
	b, _ := json.Marshal(m.OpenIDConnectAttributes)
	return string(b)
}

// provider returns the upstream of m: cached for
// metadata_expiration_time_in_seconds (an hour when unset, not at all for
// 0), or until the method's attributes change.
func (s *Service) provider(ctx context.Context, m Method) (*provider, error) {
	fp := fingerprint(m)
	now := s.Now()
	s.mu.Lock()
	p := s.providers[m.IdPID()]
	s.mu.Unlock()
	if p != nil && p.fingerprint == fp && now.Before(p.until) {
		return p, nil
	}
	a := m.OpenIDConnectAttributes
	var meta metadata
	if on(a.ManualMetadataSetup) {
		meta = metadata{Issuer: deref(a.Issuer), AuthURL: deref(a.AuthorizationURL), TokenURL: deref(a.IDTokenURL),
			UserInfoURL: deref(a.UserInfoURL), JWKSURL: deref(a.JWKSURL), EndSessionURL: deref(a.EndSessionURL)}
	} else {
		var err error
		if meta, err = s.discover(ctx, deref(a.DiscoveryURL)); err != nil {
			return nil, err
		}
		// Discovery 4.3: the document speaks for the issuer it was asked of.
		if want := deref(a.Issuer); want != "" && meta.Issuer != want {
			return nil, fmt.Errorf("discovery names the issuer %q, the login method %q", meta.Issuer, want)
		}
		if want := deref(a.Issuer); want == "" && strings.TrimSuffix(meta.Issuer, "/")+"/.well-known/openid-configuration" != deref(a.DiscoveryURL) {
			return nil, fmt.Errorf("discovery at %s names the issuer %q, which is not where it was found", deref(a.DiscoveryURL), meta.Issuer)
		}
		// The manual URLs, when given, win over discovery's.
		for _, o := range []struct {
			dst *string
			v   *string
		}{{&meta.UserInfoURL, a.UserInfoURL}, {&meta.EndSessionURL, a.EndSessionURL}} {
			if o.v != nil && *o.v != "" {
				*o.dst = *o.v
			}
		}
	}
	if meta.Issuer == "" || meta.AuthURL == "" || meta.TokenURL == "" || meta.JWKSURL == "" {
		return nil, errors.New("the provider's metadata lacks the issuer, authorization, token or JWKS endpoint")
	}
	algs := meta.Algorithms
	if len(algs) == 0 {
		algs = []string{oidc.RS256} // Discovery 3: RS256 must be supported
	}
	cfg := oidc.ProviderConfig{IssuerURL: meta.Issuer, AuthURL: meta.AuthURL, TokenURL: meta.TokenURL,
		UserInfoURL: meta.UserInfoURL, JWKSURL: meta.JWKSURL, Algorithms: algs}
	p = &provider{meta: meta, oidc: cfg.NewProvider(oidc.ClientContext(context.Background(), s.HTTP)), algs: algs, fingerprint: fp}
	ttl := defaultMetaTTL
	if a.MetadataExpirationTimeInSeconds != nil {
		ttl = time.Duration(*a.MetadataExpirationTimeInSeconds) * time.Second
	}
	p.until = now.Add(ttl)
	s.mu.Lock()
	if s.providers == nil {
		s.providers = map[string]*provider{}
	}
	s.providers[m.IdPID()] = p
	s.mu.Unlock()
	return p, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Service) discover(ctx context.Context, u string) (metadata, error) {
	if u == "" {
		return metadata{}, errors.New("the login method has neither discovery_url nor manual_metadata_setup")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return metadata{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return metadata{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return metadata{}, fmt.Errorf("discovery at %s answered %s", u, resp.Status)
	}
	var meta metadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(&meta); err != nil {
		return metadata{}, fmt.Errorf("discovery at %s: %w", u, err)
	}
	return meta, nil
}

// derived values of a state: the PKCE verifier and the nonce are keyed
// hashes of the state, so nothing secret is stored for the round trip,
// and neither can be computed from the state without the server key.
func (s *Service) derive(label, state string) string {
	return base64.RawURLEncoding.EncodeToString(s.Hasher.Hash(label, state))
}

func (s *Service) oauthConfig(m Method, p *provider) *oauth2.Config {
	a := m.OpenIDConnectAttributes
	scopes := slices.Clone(a.Scopes)
	if !slices.Contains(scopes, oidc.ScopeOpenID) {
		scopes = append([]string{oidc.ScopeOpenID}, scopes...)
	}
	return &oauth2.Config{ClientID: deref(a.ClientID), RedirectURL: s.Issuer + PathCallback, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: p.meta.AuthURL, TokenURL: p.meta.TokenURL}}
}

var errUnavailable = func(err error) *Error {
	return &Error{Code: "temporarily_unavailable", Cause: "idp_unavailable", Event: events.IdPMetadataFailed,
		Description: "The identity provider cannot be reached. Try again in a moment.", Err: err}
}

// BeginOIDC starts a sign-in at m for the pending request requestID: it
// keeps a single-use state bound to the browser (the keyed hash of its
// binding value) and returns the upstream authorization URL (code flow
// with PKCE S256 and a nonce, OpenID Connect Core 3.1.2.1).
func (s *Service) BeginOIDC(ctx context.Context, f request.Facts, m Method, requestID, browser, loginHint string) (string, error) {
	if m.Type != TypeOIDC {
		return "", ErrUnknownMethod
	}
	p, err := s.provider(ctx, m)
	if err != nil {
		e := errUnavailable(err)
		s.record(ctx, f, e.Event, "", "")
		return "", e
	}
	state, hash := s.Hasher.Mint(StateToken)
	now := s.Now().UTC()
	if err := s.Store.CreateFederationState(ctx, store.FederationState{Hash: hash, Kind: store.FederationLogin,
		RequestID: requestID, MethodID: m.ID, Browser: s.Hasher.Hash("federation_browser", browser),
		CreatedAt: now, ExpiresAt: now.Add(StateLifetime)}); err != nil {
		return "", err
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(s.derive("federation_pkce", state)),
		oauth2.SetAuthURLParam("nonce", s.derive("federation_nonce", state))}
	if loginHint != "" {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", loginHint))
	}
	if c := m.OpenIDConnectAttributes.Claims; len(c) > 0 && p.meta.ClaimsParameter {
		// OIDC Core 5.5: ask for the claims by name, in both places.
		want := map[string]any{}
		for _, name := range c {
			want[name] = nil
		}
		b, _ := json.Marshal(map[string]any{"id_token": want, "userinfo": want})
		opts = append(opts, oauth2.SetAuthURLParam("claims", string(b)))
	}
	return s.oauthConfig(m, p).AuthCodeURL(state, opts...), nil
}

// Refusals of the callback before its request is known: the person sees
// an error page (no client can be told).
var (
	ErrStateMissing = &Error{Code: "invalid_request", Cause: "state_missing", Event: events.IdPStateMissing,
		Description: "The identity provider sent the browser back without the state of the sign-in."}
	ErrStateInvalid = &Error{Code: "invalid_request", Cause: "state_invalid", Event: events.IdPStateInvalid,
		Description: "This sign-in is unknown, was already used, has expired, or was started in another browser. Start again from the application."}
)

// TakeState spends the state of a callback (or of a return from an
// upstream logout): it must be known, unexpired, unused, of kind, and
// bound to this browser. A state shown to another browser is spent too,
// so it cannot be tried twice.
func (s *Service) TakeState(ctx context.Context, f request.Facts, kind, state, browser string) (store.FederationState, error) {
	if state == "" {
		s.record(ctx, f, ErrStateMissing.Event, "", "")
		return store.FederationState{}, ErrStateMissing
	}
	if !strings.HasPrefix(state, StateToken.Prefix) || len(state) > 128 {
		s.record(ctx, f, ErrStateInvalid.Event, "", "")
		return store.FederationState{}, ErrStateInvalid
	}
	st, err := s.Store.TakeFederationState(ctx, s.Hasher.HashOf(StateToken, state), s.Now())
	if errors.Is(err, store.ErrNotFound) {
		s.record(ctx, f, ErrStateInvalid.Event, "", "")
		return st, ErrStateInvalid
	}
	if err != nil {
		return st, err
	}
	want := s.Hasher.Hash("federation_browser", browser)
	if st.Kind != kind || browser == "" || subtle.ConstantTimeCompare(st.Browser, want) != 1 {
		s.record(ctx, f, ErrStateInvalid.Event, "", "")
		return st, ErrStateInvalid
	}
	return st, nil
}

// Result is a completed upstream sign-in.
type Result struct {
	Outcome
	Method Method
	// SealedIDToken is the upstream's ID token sealed for the session (the
	// id_token_hint of a logout at the upstream).
	SealedIDToken []byte
}

// upstreamErrors are the authorization errors (RFC 6749 4.1.2.1, OIDC Core
// 3.1.2.6) an upstream's answer is passed on as; any other becomes
// server_error (the upstream refused latchkey's request: a configuration
// matter, not the person's).
var upstreamErrors = []string{"access_denied", "temporarily_unavailable", "server_error", "login_required",
	"interaction_required", "consent_required", "account_selection_required"}

var errorCodeRE = lazyre.New(`^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$`) // RFC 6749 error charset

// CompleteOIDC finishes the sign-in of a taken state with the callback's
// query q: the code is exchanged (client authentication as configured,
// the PKCE verifier), the ID token verified (signature through the
// upstream's JWKS, iss, aud, exp, nonce, at_hash), UserInfo read when the
// upstream has it, and the identity signed in (SignIn). clientID is the
// pending request's client (for the events).
func (s *Service) CompleteOIDC(ctx context.Context, f request.Facts, st store.FederationState, q url.Values, clientID string) (Result, error) {
	fail := func(e *Error) (Result, error) {
		s.record(ctx, f, e.Event, clientID, "")
		if e.Err != nil {
			s.log().WarnContext(ctx, "sign-in at an OpenID Provider failed", "method", st.MethodID, "cause", e.Cause, "err", e.Err)
		}
		return Result{}, e
	}
	if code := q.Get("error"); code != "" {
		e := &Error{Code: "server_error", Cause: code, Event: events.IdPReceivedError,
			Description: "The identity provider refused the sign-in."}
		if !errorCodeRE.MatchString(code) {
			e.Cause = "invalid_error"
		}
		if slices.Contains(upstreamErrors, code) {
			e.Code = code
		}
		return fail(e)
	}
	m, err := s.Method(ctx, st.MethodID)
	if errors.Is(err, ErrUnknownMethod) {
		return fail(&Error{Code: "server_error", Cause: "idp_disabled", Event: events.IdPReceivedError,
			Description: "This way of signing in was switched off.", Err: err})
	}
	if err != nil {
		return Result{}, err
	}
	p, err := s.provider(ctx, m)
	if err != nil {
		return fail(errUnavailable(err))
	}
	code := q.Get("code")
	if code == "" {
		return fail(&Error{Code: "server_error", Cause: "code_missing", Event: "IDP_OAUTH_MISSING_ACCESS_GRANT",
			Description: "The identity provider sent no authorization code."})
	}
	state := q.Get("state")
	cfg := s.oauthConfig(m, p)
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(s.derive("federation_pkce", state))}
	a := m.OpenIDConnectAttributes
	switch deref(a.ClientAuthenticationMethod) {
	case "PRIVATE_KEY_JWT":
		assertion, err := s.clientAssertion(ctx, m, p.meta.TokenURL)
		if err != nil {
			return fail(&Error{Code: "server_error", Cause: "idp_client_authentication_failed", Event: events.IdPClientAuthFailed,
				Description: "latchkey could not authenticate to the identity provider.", Err: err})
		}
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
		opts = append(opts, oauth2.SetAuthURLParam("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
			oauth2.SetAuthURLParam("client_assertion", assertion))
	default: // CLIENT_SECRET_BASIC (RFC 6749 2.3.1)
		secret, err := s.Config.ClientSecret(m.LoginMethod)
		if err != nil {
			return fail(&Error{Code: "server_error", Cause: "idp_client_authentication_failed", Event: events.IdPClientAuthFailed,
				Description: "latchkey could not authenticate to the identity provider.", Err: err})
		}
		cfg.ClientSecret = secret
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, s.HTTP), code, opts...)
	if err != nil {
		var re *oauth2.RetrieveError
		switch {
		case errors.As(err, &re) && re.ErrorCode == "invalid_client":
			return fail(&Error{Code: "server_error", Cause: "idp_client_authentication_failed", Event: events.IdPClientAuthFailed,
				Description: "The identity provider did not accept latchkey's client credentials.", Err: err})
		case errors.As(err, &re):
			return fail(&Error{Code: "server_error", Cause: "idp_token_error", Event: events.IdPMissingAccessToken,
				Description: "The identity provider did not exchange the authorization code.", Err: err})
		}
		return fail(errUnavailable(err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return fail(&Error{Code: "server_error", Cause: "id_token_missing", Event: events.IdPMissingIDToken,
			Description: "The identity provider sent no ID token."})
	}
	invalid := func(err error) (Result, error) {
		return fail(&Error{Code: "access_denied", Cause: "invalid_id_token", Event: events.IdPInvalidIDToken,
			Description: "The identity provider's ID token is not valid.", Err: err})
	}
	verifier := p.oidc.VerifierContext(oidc.ClientContext(ctx, s.HTTP), &oidc.Config{ClientID: cfg.ClientID,
		SupportedSigningAlgs: p.algs, Now: s.Now})
	idt, err := verifier.Verify(oidc.ClientContext(ctx, s.HTTP), raw)
	if err != nil {
		return invalid(err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(s.derive("federation_nonce", state))) != 1 {
		return invalid(errors.New("the ID token's nonce is not the one sent"))
	}
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			return invalid(err)
		}
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return invalid(err)
	}
	if p.meta.UserInfoURL != "" {
		ui, err := p.oidc.UserInfo(oidc.ClientContext(ctx, s.HTTP), oauth2.StaticTokenSource(tok))
		if err != nil {
			return fail(&Error{Code: "temporarily_unavailable", Cause: "userinfo_failed", Event: events.IdPMissingUserInfo,
				Description: "The identity provider's UserInfo endpoint did not answer.", Err: err})
		}
		// OIDC Core 5.3.2: UserInfo of another subject must not be used.
		if ui.Subject != idt.Subject {
			return fail(&Error{Code: "access_denied", Cause: "userinfo_subject_mismatch", Event: events.IdPMissingUserInfo,
				Description: "The identity provider's UserInfo is about someone else.",
				Err:         fmt.Errorf("UserInfo sub %q, ID token sub %q", ui.Subject, idt.Subject)})
		}
		more := map[string]any{}
		if err := ui.Claims(&more); err == nil {
			for k, v := range more {
				if k != "sub" {
					claims[k] = v
				}
			}
		}
	}
	u := Upstream{Subject: idt.Subject, Attributes: claims, EmailVerified: verified(claims["email_verified"])}
	out, err := s.SignIn(ctx, f, m, u)
	var refused *Error
	if errors.As(err, &refused) {
		r := *refused
		r.Event = events.IdPAccountRefused
		return fail(&r)
	}
	if err != nil {
		return Result{}, err
	}
	s.record(ctx, f, events.IdPLoginSucceeded, clientID, out.Person.ID)
	res := Result{Outcome: out, Method: m}
	if s.Tokens != nil {
		res.SealedIDToken = s.Tokens.Seal([]byte(raw), []byte(out.Person.ID))
	}
	return res, nil
}

// verified reads email_verified: a boolean, or the string "true" that
// some providers send.
func verified(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "true"
	}
	return false
}

// clientAssertion signs the RFC 7523 client assertion of PRIVATE_KEY_JWT
// (OIDC Core 9) with the method's key pair: iss and sub the client id, aud
// the token endpoint, a one-minute lifetime, a random jti; kid is the key
// pair's id, under which the upstream registered its public key.
func (s *Service) clientAssertion(ctx context.Context, m Method, tokenURL string) (string, error) {
	snap, err := s.Config.Snapshot(ctx)
	if err != nil {
		return "", err
	}
	keyID := deref(m.OpenIDConnectAttributes.SigningKeyID)
	signer, err := s.Config.Signer(snap, keyID)
	if err != nil {
		return "", fmt.Errorf("key pair %q: %w", keyID, err)
	}
	alg, err := algorithmOf(signer)
	if err != nil {
		return "", err
	}
	js, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: signer},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), keyID))
	if err != nil {
		return "", err
	}
	now := s.Now()
	clientID := deref(m.OpenIDConnectAttributes.ClientID)
	return jwt.Signed(js).Claims(jwt.Claims{Issuer: clientID, Subject: clientID, Audience: jwt.Audience{tokenURL},
		ID: token.Random(16), IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Minute))}).Serialize()
}

func algorithmOf(k crypto.Signer) (jose.SignatureAlgorithm, error) {
	switch pub := k.Public().(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch pub.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", errors.New("the key pair's key cannot sign a client assertion (RSA or EC P-256/384/521)")
}

// BeginLogout sends a browser whose session was signed in at an OpenID
// Provider with front_channel_logout_enabled on to the provider's
// end-session endpoint (OpenID Connect RP-Initiated Logout 1.0), with the
// upstream ID token as id_token_hint; the provider sends it back to
// PathLoggedOut, which goes on to target. ok is false when the session
// has no such upstream, or the upstream has no end-session endpoint
// (recorded: the upstream session stays).
func (s *Service) BeginLogout(ctx context.Context, f request.Facts, sess store.Session, target, browser string) (to string, ok bool, err error) {
	if sess.IdPID == "" {
		return "", false, nil
	}
	m, err := s.Method(ctx, sess.IdPID)
	if err != nil || m.Type != TypeOIDC || !on(m.OpenIDConnectAttributes.FrontChannelLogoutEnabled) {
		return "", false, nil
	}
	p, err := s.provider(ctx, m)
	if err != nil || p.meta.EndSessionURL == "" {
		s.record(ctx, f, events.IdPEndSessionFailed, "", sess.PersonID)
		if err != nil {
			s.log().WarnContext(ctx, "logout at an OpenID Provider", "method", m.ID, "err", err)
		}
		return "", false, nil
	}
	state, hash := s.Hasher.Mint(StateToken)
	now := s.Now().UTC()
	if err := s.Store.CreateFederationState(ctx, store.FederationState{Hash: hash, Kind: store.FederationLogout,
		MethodID: m.ID, Browser: s.Hasher.Hash("federation_browser", browser), Target: target,
		CreatedAt: now, ExpiresAt: now.Add(StateLifetime)}); err != nil {
		return "", false, err
	}
	v := url.Values{"post_logout_redirect_uri": {s.Issuer + PathLoggedOut}, "state": {state},
		"client_id": {deref(m.OpenIDConnectAttributes.ClientID)}}
	if sess.UpstreamIDToken != nil && s.Tokens != nil {
		if raw, err := s.Tokens.Open(sess.UpstreamIDToken, []byte(sess.PersonID)); err == nil {
			v.Set("id_token_hint", string(raw))
		}
	}
	s.record(ctx, f, events.IdPEndSessionInitiated, "", sess.PersonID)
	sep := "?"
	if strings.Contains(p.meta.EndSessionURL, "?") {
		sep = "&"
	}
	return p.meta.EndSessionURL + sep + v.Encode(), true, nil
}
