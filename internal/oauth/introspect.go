package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
	"github.com/latchkey/latchkey/internal/webhook"
)

// Details configures the person-related members of introspection.
type Details struct {
	UserDetails  map[string]string // person attribute -> key in user_details
	Groups       *GroupPolicies    // nil or disabled: no group members
	LegacyGroups bool              // also answer group_permissions (deprecated)
	UserHook     *webhook.Hook     // user details web hook; may be nil
	AccessHook   *webhook.Hook     // access token web hook; may be nil
}

var inactive = map[string]bool{"active": false}

// Introspect is POST /oauth/api/v2/token/introspect (RFC 7662).
func (s *Service) Introspect(w http.ResponseWriter, r *http.Request) error {
	f := s.facts(r)
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		return err
	}
	form, err := httpx.Single(r.PostForm, "token", "token_type_hint", "refresh_user_details")
	if err != nil {
		return err
	}
	// On the generations last read, confirmed by the event's insert
	// (client.Optimistically): no read of them before the answer.
	body, err := client.Optimistically(r.Context(), func(ctx context.Context) (any, error) {
		return s.introspect(r.WithContext(ctx), f, form)
	})
	if err != nil {
		return err
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, body)
	return nil
}

// introspect is Introspect's answer, before it is written.
func (s *Service) introspect(r *http.Request, f request.Facts, form map[string]string) (any, error) {
	caller, _, err := s.Clients.Authenticate(r, s.Issuer+PathIntrospect)
	if err != nil {
		s.record(r.Context(), f, events.OAuth{Type: events.IntrospectionFailed, ClientID: r.PostForm.Get("client_id")})
		he := clientError(err)
		var e *httpx.Error
		if errors.As(he, &e) && e.Status != http.StatusTooManyRequests {
			// shared/spec/NOTES.md: a missing or bad client credential is 401 invalid_client.
			e.Status, e.Code = http.StatusUnauthorized, ErrInvalidClient
		}
		return nil, he
	}
	if client.IsPublic(caller) {
		// RFC 7662 section 2.1: only an authenticated client may ask; a
		// public client has nothing to authenticate with.
		s.record(r.Context(), f, events.OAuth{Type: events.IntrospectionFailed, ClientID: caller.ID})
		return nil, oauthError(http.StatusUnauthorized, ErrInvalidClient, "A public client cannot introspect tokens.")
	}
	if form["token"] == "" {
		return nil, answer(newError(ErrInvalidRequest, "The token parameter is required."))
	}
	refresh := false
	if v := form["refresh_user_details"]; v != "" {
		if refresh, err = strconv.ParseBool(v); err != nil {
			return nil, answer(newError(ErrInvalidRequest, "refresh_user_details must be true or false."))
		}
	}
	body, err := s.IntrospectToken(r.Context(), f, caller, form["token"], refresh)
	if err != nil {
		return nil, answer(err)
	}
	return body, nil
}

// IntrospectToken answers for value: the active members, or {"active":false}
// for an unknown, expired, revoked or exhausted token. Each active answer
// for a token with a usage limit counts one use.
func (s *Service) IntrospectToken(ctx context.Context, f request.Facts, caller store.Client, value string, refreshDetails bool) (any, error) {
	fail := func(reason string) (any, error) {
		s.record(ctx, f, events.OAuth{Type: reason, ClientID: caller.ID, AppName: caller.Name})
		return inactive, nil
	}
	kind := token.AccessToken
	if strings.HasPrefix(value, token.RefreshToken.Prefix) {
		kind = token.RefreshToken
	}
	found, err := token.Active(ctx, s.tokens(), s.Store, kind, value, f.Time)
	t, g := found.Token, found.Grant
	switch {
	case errors.Is(err, token.ErrInactive):
		return fail(events.IntrospectionFailed) // a revoked grant's tokens spend no uses
	case err != nil:
		return nil, err
	case t.ClientID != caller.ID && !caller.IntrospectAnyToken:
		// RFC 7662 section 4: a client sees its own tokens; only a resource
		// server the operator named sees others'. Decided before a use is
		// counted, so a foreign caller cannot spend a token's usage limit.
		return fail(events.IntrospectionFailed)
	}
	client, err := s.client(ctx, t.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return fail(events.IntrospectionFailed) // the client was removed: its tokens die with it, and spend no uses
	}
	if err != nil {
		return nil, err
	}
	var data grantData
	if err := decodeGrantData(g.Data, &data); err != nil {
		return nil, err
	}
	sub := t.Subject
	if sub == "" {
		sub = t.ClientID // client credentials: the client is the subject
	}
	amr := g.AMR
	if amr == nil {
		amr = []string{}
	}
	out := &introspection{
		Active: true, Scope: joinScopes(t.Scopes), ClientID: t.ClientID, TokenType: "bearer",
		Exp: t.ExpiresAt.Unix(), Iat: t.IssuedAt.Unix(), Nbf: t.IssuedAt.Unix(), Sub: sub,
		UsageLimit: t.UsageLimit, AMR: amr,
		AppIdentifier: client.AppIdentifier, AppPlatform: client.AppPlatform, AppVersion: client.AppVersion,
		UserDetails: map[string]any{},
	}
	if t.Subject != "" {
		details, err := s.userDetails(ctx, f, s.Store, g, data, refreshDetails)
		if err != nil {
			return nil, err
		}
		out.UserDetails = details
		if s.Details.Groups.Enabled() {
			if report := s.Details.Groups.Report(ctx, t.Subject); report != nil {
				out.GroupPolicies = report
				if s.Details.LegacyGroups {
					b, _ := json.Marshal(report) // decoded from JSON: marshals
					out.GroupPermissions = string(b)
				}
			}
		}
	}
	success := events.OAuth{Type: events.IntrospectionSuccess, ClientID: caller.ID, AppName: caller.Name,
		UserID: t.Subject, TransactionID: g.ID}
	if token.Limited(found) {
		// The answer is built before the use is counted, so that the use
		// and its event commit together (store.SpendTokenUse with its event)
		// and nothing after them can fail the answer but the encoding.
		var counted store.Token
		_, err := s.Events.RecordOAuthBy(f, success, func(ev store.Event) (bool, error) {
			var err error
			counted, err = token.SpendRecording(ctx, s.Store, found, ev)
			return err == nil, err
		})
		if errors.Is(err, token.ErrExhausted) {
			return fail(events.IntrospectionExhausted)
		}
		if err != nil {
			return nil, err
		}
		out.UsageCount = &counted.UsageCount
	}
	body, err := withClaims(out, data.AdditionalClaims)
	if err != nil {
		return nil, err
	}
	if !token.Limited(found) {
		s.record(ctx, f, success)
	}
	return body, nil
}

// introspection is an active introspection answer (RFC 7662 section 2.2
// and shared/spec/interface.md's members).
type introspection struct {
	Active           bool     `json:"active"`
	Scope            string   `json:"scope"`
	ClientID         string   `json:"client_id"`
	TokenType        string   `json:"token_type"`
	Exp              int64    `json:"exp"`
	Iat              int64    `json:"iat"`
	Nbf              int64    `json:"nbf"`
	Sub              string   `json:"sub"`
	UsageLimit       int      `json:"usage_limit"`
	UsageCount       *int     `json:"usage_count,omitempty"`
	AMR              []string `json:"amr"`
	AppIdentifier    string   `json:"app_identifier"`
	AppPlatform      string   `json:"app_platform"`
	AppVersion       string   `json:"app_version"`
	UserDetails      any      `json:"user_details"`
	GroupPolicies    any      `json:"urn:vendor.com:oidc:group_policies,omitempty"`
	GroupPermissions string   `json:"group_permissions,omitempty"` // deprecated form of GroupPolicies
}

// withClaims is the answer with the access token hook's claims added; they
// never override ours. Without them (the common answer) it is the struct
// itself: one reflection-cached encoding, where a MarshalJSON method would
// cost a second encoder and a compaction of its output on every answer.
func withClaims(in *introspection, extra map[string]any) (any, error) {
	if len(extra) == 0 {
		return in, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var ours map[string]json.RawMessage
	if err := json.Unmarshal(b, &ours); err != nil {
		return nil, err
	}
	all := make(map[string]any, len(ours)+len(extra))
	for k, v := range extra {
		all[k] = v
	}
	for k, v := range ours {
		all[k] = v
	}
	return all, nil
}

// userDetails returns the grant's cached user details, loading them (from
// the person store, then through the user details hook) when none are cached
// or when refresh is asked for. st is the store or the transaction to read
// and write through (an issuance passes its own).
func (s *Service) userDetails(ctx context.Context, f request.Facts, st store.Store, g store.Grant, data grantData, refresh bool) (map[string]any, error) {
	if data.UserDetails != nil && !refresh {
		return data.UserDetails, nil
	}
	p, err := st.GetPerson(ctx, g.Subject)
	if errors.Is(err, store.ErrNotFound) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	details, err := s.detailsOf(ctx, f, st, p, g, data, nil)
	if err != nil {
		return nil, err
	}
	data.UserDetails = details
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	if err := st.SetGrantData(ctx, g.ID, b); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return details, nil
}
