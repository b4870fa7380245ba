package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
	"github.com/latchkey/latchkey/internal/token"
)

// Device flow paths and constants (RFC 8628, shared/spec/interface.md).
const (
	PathDeviceVerification = "/oauth/device_authorization/verification"
	PathDeviceApprove      = "/oauth/device_authorization/approve"
	DeviceApproveScope     = "access:device-authorization:approve"
	// UserCodeAlphabet has no vowels (no words) and no look-alike digits.
	UserCodeAlphabet   = "BCDFGHJKLMNPQRSTVWXZ"
	userCodeLen        = 8
	deviceInterval     = 5 // seconds (RFC 8628 section 3.2 default and the spec's minimum)
	slowDownStep       = 5 // seconds added at every slow_down (RFC 8628 section 3.5)
	defaultDeviceLife  = 10 * time.Minute
	errAuthzPending    = "authorization_pending"
	errSlowDown        = "slow_down"
	errExpiredToken    = "expired_token"
	errAlreadyApproved = "already_authorized"
)

func (s *Service) deviceLifetime() time.Duration {
	if s.DeviceCodeLifetime > 0 {
		return s.DeviceCodeLifetime
	}
	return defaultDeviceLife
}

// NewUserCode draws 8 characters from UserCodeAlphabet with crypto/rand,
// rejecting bytes >= 240 so that every character is equally likely (no modulo bias).
func NewUserCode() string {
	out := make([]byte, 0, userCodeLen)
	var buf [16]byte
	for len(out) < userCodeLen {
		if _, err := rand.Read(buf[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		for _, b := range buf {
			if b < 240 && len(out) < userCodeLen {
				out = append(out, UserCodeAlphabet[int(b)%len(UserCodeAlphabet)])
			}
		}
	}
	return string(out)
}

// NormalizeUserCode accepts a user code as people type it (lower case,
// with a dash or spaces) and returns its canonical 8 characters, or "".
func NormalizeUserCode(s string) string {
	if len(s) > 32 {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == '-' || r == ' ':
		case strings.ContainsRune(UserCodeAlphabet, r):
			b.WriteRune(r)
		default:
			return ""
		}
	}
	if b.Len() != userCodeLen {
		return ""
	}
	return b.String()
}

// FormatUserCode shows a code to people as XXXX-XXXX.
func FormatUserCode(c string) string {
	if len(c) != userCodeLen {
		return c
	}
	return c[:4] + "-" + c[4:]
}

// DeviceResponse is RFC 8628 section 3.2.
type DeviceResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// DeviceAuthorization is POST /oauth/device_authorization.
func (s *Service) DeviceAuthorization(w http.ResponseWriter, r *http.Request) error {
	return answer(s.deviceAuthorization(w, r))
}

func (s *Service) deviceAuthorization(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f := s.facts(r)
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		return err
	}
	form, err := httpx.Single(r.PostForm, "client_id", "scope", "idp")
	if err != nil {
		return err
	}
	if form["client_id"] == "" && r.Header.Get("Authorization") == "" {
		s.record(ctx, f, events.OAuth{Type: events.DeviceRequestInvalid})
		return newError(ErrInvalidRequest, "The client_id parameter is required.")
	}
	// Public clients send only client_id; confidential clients authenticate
	// (RFC 8628 section 3.1, RFC 6749 section 3.2.1).
	client, _, err := s.Clients.Authenticate(r, s.Issuer+PathDevice)
	if err != nil {
		s.record(ctx, f, events.OAuth{Type: events.DeviceInvalidClient, ClientID: truncateID(form["client_id"])})
		return clientError(err)
	}
	if !mayUseDeviceFlow(client) {
		s.record(ctx, f, events.OAuth{Type: events.DeviceInvalidClient, ClientID: client.ID, AppName: client.Name})
		return newError(ErrUnauthorizedClient, "The client may not use the device flow.")
	}
	requested, desc := ParseScope(form["scope"])
	var scopes []string
	if desc == "" {
		scopes, desc = AllowedScopes(client, requested)
	}
	if desc != "" {
		s.record(ctx, f, events.OAuth{Type: events.DeviceScopeInvalid, ClientID: client.ID, AppName: client.Name})
		return newError(ErrInvalidScope, desc)
	}
	if len(form["idp"]) > maxParamLen {
		return newError(ErrInvalidRequest, "The idp parameter is too long.")
	}
	now := s.Now().UTC()
	value, hash, err := s.tokens().Mint(token.DeviceCode, token.Claims{})
	if err != nil {
		return err
	}
	d := store.DeviceCode{Hash: hash, ClientID: client.ID, Scopes: scopes, IDP: form["idp"], Interval: deviceInterval,
		Status: store.DevicePending, CreatedAt: now, ExpiresAt: now.Add(s.deviceLifetime())}
	// A user code collides with a live one with probability n/20^8; retry a few times.
	for attempt := 0; ; attempt++ {
		d.UserCode = NewUserCode()
		err = s.Store.Tx(ctx, func(tx store.Store) error {
			if err := tx.CreateDeviceCode(ctx, d); err != nil {
				return err
			}
			return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.DeviceCodeCreated, ClientID: client.ID, AppName: client.Name})
		})
		if !errors.Is(err, store.ErrConflict) || attempt == 4 {
			break
		}
	}
	if err != nil {
		return err
	}
	verification := s.Issuer + PathDeviceVerification
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, DeviceResponse{
		DeviceCode: value, UserCode: d.UserCode, VerificationURI: verification,
		VerificationURIComplete: verification + "?" + url.Values{"user_code": {d.UserCode}}.Encode(),
		ExpiresIn:               int64(s.deviceLifetime() / time.Second), Interval: deviceInterval,
	})
	return nil
}

// ErrDeviceCodeGone: the user code is unknown, used, or expired.
var (
	ErrUserCodeUnknown = errors.New("oauth: unknown user code")
	ErrUserCodeExpired = errors.New("oauth: user code expired")
	ErrUserCodeDecided = errors.New("oauth: device already authorized or denied")
)

// LookupUserCode returns the pending device authorization of a user code.
func (s *Service) LookupUserCode(ctx context.Context, userCode string) (store.DeviceCode, error) {
	code := NormalizeUserCode(userCode)
	if code == "" {
		return store.DeviceCode{}, ErrUserCodeUnknown
	}
	d, err := s.Store.GetDeviceCodeByUserCode(ctx, code)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return d, ErrUserCodeUnknown
	case err != nil:
		return d, err
	case !s.Now().Before(d.ExpiresAt):
		return d, ErrUserCodeExpired
	case d.Status != store.DevicePending:
		return d, ErrUserCodeDecided
	}
	return d, nil
}

// ApproveDevice approves a pending device authorization for the person of
// an approval (authflow's decision); by is "browser" or "app".
func (s *Service) ApproveDevice(ctx context.Context, f request.Facts, userCode string, a authflow.Approval, by string) error {
	if a.Subject() == "" {
		return errNotApproved
	}
	return s.decideDevice(ctx, f, userCode, by, func(d *store.DeviceCode) {
		d.Status, d.Subject, d.AuthLevel, d.AMR, d.ApprovedBy = store.DeviceApproved, a.Subject(), a.Level(), a.AMR(), by
	})
}

// DenyDevice records that the person said no: the device's next poll
// answers access_denied.
func (s *Service) DenyDevice(ctx context.Context, f request.Facts, userCode, subject string) error {
	return s.decideDevice(ctx, f, userCode, "", func(d *store.DeviceCode) { d.Status, d.Subject = store.DeviceDenied, subject })
}

// decideDevice applies decide to a pending device authorization.
func (s *Service) decideDevice(ctx context.Context, f request.Facts, userCode, by string, decide func(*store.DeviceCode)) error {
	d, err := s.LookupUserCode(ctx, userCode)
	if err != nil {
		return err
	}
	now := s.Now()
	d, err = s.Store.UpdateDeviceCode(ctx, d.Hash, func(d store.DeviceCode) (store.DeviceCode, error) {
		switch {
		case !now.Before(d.ExpiresAt):
			return d, ErrUserCodeExpired
		case d.Status != store.DevicePending:
			return d, ErrUserCodeDecided
		}
		decide(&d)
		return d, nil
	})
	if err != nil {
		return err
	}
	typ := events.DeviceDenied
	switch {
	case d.Status == store.DeviceApproved && by == "app":
		typ = events.DeviceApprovedInApp
	case d.Status == store.DeviceApproved:
		typ = events.DeviceGrantCreated
	}
	s.record(ctx, f, events.OAuth{Type: typ, ClientID: d.ClientID, UserID: d.Subject})
	return nil
}

// Approve is POST /oauth/device_authorization/approve?user_code=...: an app
// approves a device for its own person with its access token.
func (s *Service) Approve(w http.ResponseWriter, r *http.Request) error {
	return answer(s.approve(w, r))
}

func (s *Service) approve(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f := s.facts(r)
	userCode := r.URL.Query().Get("user_code")
	bearer := bearerToken(r)
	if bearer == "" {
		return bearerMissing()
	}
	if userCode == "" {
		return newError(ErrInvalidRequest, "The user_code parameter is required.")
	}
	found, err := token.Active(ctx, s.tokens(), s.Store, token.AccessToken, bearer, f.Time)
	t, g := found.Token, found.Grant
	if errors.Is(err, token.ErrInactive) {
		return bearerInvalid()
	}
	if err != nil {
		return err
	}
	if !slices.Contains(t.Scopes, DeviceApproveScope) || t.Subject == "" {
		return oauthError(http.StatusForbidden, ErrAccessDenied, "The access token does not carry "+DeviceApproveScope+" for a person.")
	}
	if _, err := token.Spend(ctx, s.Store, found); errors.Is(err, token.ErrExhausted) {
		return bearerInvalid()
	} else if err != nil {
		return err
	}
	d, err := s.GuessUserCode(ctx, f, userCode) // the verification page's guessing throttle
	if err == nil {
		if err := s.mayApproveFor(ctx, t.ClientID, d.ClientID); err != nil {
			return err
		}
		for _, sc := range d.Scopes {
			if !slices.Contains(g.Scopes, sc) {
				return oauthError(http.StatusForbidden, "insufficient_scope", "The app's grant does not cover the scope "+sc+" the device asks for.")
			}
		}
		var a authflow.Approval
		if a, err = s.inAppApproval(ctx, g, d); err == nil {
			err = s.ApproveDevice(ctx, f, userCode, a, "app")
		}
	}
	var refused *throttle.Refused
	switch {
	case errors.As(err, &refused):
		return httpx.TooManyRequests("too_many_attempts", "Too many wrong user codes. Wait and try again.", refused.RetryAfter)
	case errors.Is(err, ErrUserCodeUnknown):
		return newError(ErrInvalidGrant, "The user code is invalid.")
	case errors.Is(err, ErrUserCodeExpired):
		return newError(errExpiredToken, "The user code has expired.")
	case errors.Is(err, ErrUserCodeDecided):
		return newError(errAlreadyApproved, "The device was already authorized.")
	case err != nil:
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// mayApproveFor decides whether tokens of client app may approve device
// flows of client device: its own always, another's only when the operator
// listed it in app's device_approval_clients — otherwise a person would hand
// a token to a client they never saw named (no consent page in-app).
func (s *Service) mayApproveFor(ctx context.Context, app, device string) error {
	if app == device {
		return nil
	}
	c, err := s.client(ctx, app)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err == nil && slices.Contains(c.DeviceApprovalClients, device) {
		return nil
	}
	return oauthError(http.StatusForbidden, ErrAccessDenied, "This app may not approve devices of another client.")
}

// inAppApproval asks authflow whether the app's grant may approve device d:
// the grant's authentication must reach the level the device's scopes
// require, and its person must still be allowed to sign in.
func (s *Service) inAppApproval(ctx context.Context, g store.Grant, d store.DeviceCode) (authflow.Approval, error) {
	configured, err := s.Store.GetScopes(ctx, d.Scopes)
	if err != nil {
		return authflow.Approval{}, err
	}
	p, err := s.Store.GetPerson(ctx, g.Subject)
	if errors.Is(err, store.ErrNotFound) {
		p = store.Person{ID: g.Subject}
	} else if err != nil {
		return authflow.Approval{}, err
	}
	pol, err := s.Policy(ctx)
	if err != nil {
		return authflow.Approval{}, err
	}
	dec := authflow.Decide(pol, authflow.Request{Kind: authflow.InApp, Scopes: d.Scopes, Configured: configured,
		Person: &p, Auth: &authflow.Authentication{Level: g.AuthLevel, AMR: g.AMR, Time: g.CreatedAt}})
	if a, ok := dec.Approved(); ok {
		return a, nil
	}
	if dec.Reason == authflow.ReasonLevel {
		// RFC 9470 section 3: the authentication behind the token is too weak.
		return authflow.Approval{}, oauthError(http.StatusForbidden, ErrInsufficientUserAuthentication,
			fmt.Sprintf("The device's scopes require authentication level %d; the app's sign-in reached %d.", dec.Level, g.AuthLevel))
	}
	return authflow.Approval{}, oauthError(http.StatusForbidden, ErrAccessDenied, "The person may not approve devices.")
}
