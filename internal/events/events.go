// Package events records OAuth and person events in the append-only event
// store; the search APIs read them.
package events

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/store"
)

// OAuth event types. Names come from the original product's catalogue
// (shared/spec/oauth-event-types.txt) where one means the same thing; the
// others are latchkey's own and marked so in docs/events.md.
const (
	AuthzRequestInvalid            = "AUTHZ_REQUEST_INVALID"
	AuthzRequestInvalidClient      = "AUTHZ_REQUEST_INVALID_CLIENT"
	AuthzRequestRedirectURIInvalid = "AUTHZ_REQUEST_REDIRECT_URI_INVALID"
	AuthzRequestScopeInvalid       = "AUTHZ_REQUEST_SCOPE_INVALID"
	AuthzRequestUnauthorizedClient = "AUTHZ_REQUEST_UNAUTHORIZED_CLIENT"
	AuthzRequestInvalidResponse    = "AUTHZ_REQUEST_INVALID_RESPONSE_TYPE"
	AuthzRequestGrantCreated       = "AUTHZ_REQUEST_GRANT_CREATED"
	AuthzRequestTokenCreated       = "AUTHZ_REQUEST_TOKEN_CREATED"
	AuthzRequestDenied             = "AUTHZ_REQUEST_DENIED" // latchkey's own
	AuthnLoginRequired             = "AUTHN_REQUEST_LOGIN_REQUIRED"
	AuthnConsentRequired           = "AUTHN_REQUEST_CONSENT_REQUIRED"
	ConsentGiven                   = "CONSENT_GIVEN"
	LoginSucceeded                 = "LOGIN_SUCCEEDED"                        // latchkey's own
	LoginFailed                    = "LOGIN_FAILED"                           // latchkey's own
	TOTPSucceeded                  = "STEP_UP_TOTP_SUCCEEDED"                 // latchkey's own
	TOTPFailed                     = "OTP_AUTH_NOT_AUTHENTICATED_INVALID_OTP" // also replays and throttled attempts
	LoginThrottled                 = "LOGIN_THROTTLED"                        // latchkey's own

	ClientCredentialsCheckFailed = "CLIENT_CREDENTIALS_CHECK_FAILED"

	TokenRequestInvalid             = "TOKEN_REQUEST_INVALID"
	TokenRequestInvalidClient       = "TOKEN_REQUEST_INVALID_CLIENT"
	TokenRequestInvalidGrant        = "TOKEN_REQUEST_INVALID_GRANT"
	TokenRequestInvalidRedirectURI  = "TOKEN_REQUEST_INVALID_REDIRECT_URI"
	TokenRequestInvalidPKCEVerifier = "TOKEN_REQUEST_INVALID_PKCE_VERIFIER"
	TokenRequestScopeInvalid        = "TOKEN_REQUEST_SCOPE_INVALID"
	TokenRequestUnsupportedGrant    = "TOKEN_REQUEST_UNSUPPORTED_GRANT_TYPE"
	TokenRequestDisabledGrant       = "TOKEN_REQUEST_DISABLED_GRANT_TYPE"
	TokenRequestInvalidRefreshToken = "TOKEN_REQUEST_INVALID_REFRESH_TOKEN"
	TokenRequestExpiredRefreshToken = "TOKEN_REQUEST_EXPIRED_REFRESH_TOKEN"
	TokenRequestMaxValidityExpired  = "TOKEN_REQUEST_MAX_VALIDITY_EXPIRED_REFRESH_TOKEN"
	TokenRequestAccessTokenCreated  = "TOKEN_REQUEST_ACCESS_TOKEN_CREATED"
	TokenRequestAccessTokenRefresh  = "TOKEN_REQUEST_ACCESS_TOKEN_REFRESHED"
	TokenRequestPasswordCreated     = "TOKEN_REQUEST_PASSWORD_ACCESS_TOKEN_CREATED"
	TokenRequestPasswordInvalid     = "TOKEN_REQUEST_PASSWORD_INVALID_CREDENTIALS"
	TokenRequestCodeReplayDetected  = "TOKEN_REQUEST_CODE_REPLAY_DETECTED"         // latchkey's own
	TokenRequestRefreshReuse        = "TOKEN_REQUEST_REFRESH_TOKEN_REUSE_DETECTED" // latchkey's own

	TokenRevokeInvalidRequest      = "TOKEN_REVOKE_INVALID_REQUEST"
	TokenRevokeClientInvalid       = "TOKEN_REVOKE_CLIENT_INVALID"
	TokenRevokeTokenInvalid        = "TOKEN_REVOKE_TOKEN_INVALID"
	TokenRevokeAccessTokenSuccess  = "TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS"
	TokenRevokeRefreshTokenSuccess = "TOKEN_REVOKE_REFRESH_TOKEN_SUCCESS"
)

// Recorder builds event records and appends them.
type Recorder struct {
	Now   func() time.Time
	NewID func() string
	// Observe, when set, sees every event appended, with its request (nil
	// for none): the metrics count outcomes from the events, so no flow
	// needs a metrics call of its own. An event appended in a transaction
	// that later rolls back is seen too.
	Observe func(r *http.Request, e *store.Event)
}

// NewRecorder returns a Recorder on the wall clock and random UUIDs.
func NewRecorder() *Recorder {
	// Version 7 UUIDs grow with time: new events go to the end of the id
	// index instead of a random page, so a commit writes fewer pages.
	return &Recorder{Now: time.Now, NewID: func() string { return uuid.Must(uuid.NewV7()).String() }}
}

// OAuth is an OAuth event about to be recorded.
type OAuth struct {
	Type          string
	ClientID      string
	AppName       string
	TransactionID string
	UserID        string
	AgentUser     string
}

// RecordOAuth appends one OAuth event through st, which may be a
// transaction: the event then commits with the action it records. The
// request supplies client_ip and user_agent; r may be nil.
func (rec *Recorder) RecordOAuth(ctx context.Context, st Appender, r *http.Request, e OAuth) error {
	ev := store.Event{
		ID:            rec.NewID(),
		Kind:          store.EventOAuth,
		Type:          e.Type,
		Name:          DisplayName(e.Type),
		ClientID:      e.ClientID,
		AppName:       e.AppName,
		TransactionID: e.TransactionID,
		UserID:        e.UserID,
		AgentUser:     e.AgentUser,
		Occurred:      rec.Now().UTC(),
	}
	if r != nil {
		ev.ClientIP = clientaddr.Of(r)
		ev.UserAgent = truncate(r.UserAgent(), 512)
	}
	return rec.append(ctx, st, r, ev)
}

func (rec *Recorder) append(ctx context.Context, st Appender, r *http.Request, ev store.Event) error {
	if err := st.AppendEvents(ctx, ev); err != nil {
		return err
	}
	if rec.Observe != nil {
		rec.Observe(r, &ev)
	}
	return nil
}

// DisplayName turns TOKEN_REQUEST_ACCESS_TOKEN_CREATED into
// "Token Request Access Token Created".
func DisplayName(typ string) string {
	words := strings.Split(strings.ToLower(typ), "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
