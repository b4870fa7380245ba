package oauth

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/claim"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/webhook"
)

// hookAnswers are the web hooks' answers to an issuance, asked before its
// transaction (askHooks): a transaction that waited on a hook's round
// trip would hold what it holds (the person against a block; on an
// embedded store, every other write) for as long. mint takes an answer
// only when the request it would send from what it read in the
// transaction is the request answered; otherwise it asks again, inside,
// where the hook's bounded timeout bounds the hold.
type hookAnswers struct {
	access   *webhook.AccessTokenRequest // nil: not asked
	narrowed []string
	claims   map[string]any
	user     *webhook.UserDetailsRequest // nil: not asked
	details  map[string]any
}

// hooksEnabled: an issuance may call a web hook.
func (s *Service) hooksEnabled() bool {
	return s.Details.AccessHook.Enabled() || s.Details.UserHook.Enabled()
}

// askHooks asks the web hooks what mint would ask them for is, before
// its transaction: the access token hook, then, for a new grant with an
// ID token, the user details hook with the scopes the first answer left.
// p is the person of is when the caller read it (nil: read here). It
// answers nil, having asked nothing, when no hook is configured or the
// person may not sign in (the transaction refuses the issuance). A hook's
// failure is what mint's would be: fail closed, the request fails before
// anything is used; fail open, the answer is the one without the hook.
func (s *Service) askHooks(ctx context.Context, is issue, p *store.Person) (*hookAnswers, error) {
	if !s.hooksEnabled() {
		return nil, nil
	}
	subject := is.subject
	if is.grant != nil {
		subject = is.grant.Subject
	}
	var person store.Person
	switch {
	case p != nil:
		person = *p
	case subject != "":
		var err error
		if person, err = s.Store.GetPerson(ctx, subject); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil
			}
			return nil, err
		}
	}
	if subject != "" && !identity.MaySignIn(person.Status) {
		return nil, nil
	}
	data, err := is.grantData()
	if err != nil {
		return nil, err
	}
	a := &hookAnswers{}
	scopes := is.scopes
	if s.Details.AccessHook.Enabled() {
		req := s.accessHookRequest(is.client, subject, scopes, data.HookParams, person)
		if a.narrowed, a.claims, err = s.askAccessHook(ctx, s.Store, is.client, req); err != nil {
			return nil, err
		}
		a.access, scopes = &req, a.narrowed
	}
	if s.Details.UserHook.Enabled() && is.grant == nil && s.issuesIDToken(subject, scopes) {
		req := s.userHookRequest(person, scopes, data.HookParams)
		if a.details, err = s.askUserHook(ctx, request.Facts{}, s.Store, is.client.ID, req); err != nil {
			return nil, err
		}
		a.user = &req
	}
	return a, nil
}

// accessAnswer is the answer to req asked before the transaction, if
// that was the request.
func (a *hookAnswers) accessAnswer(req webhook.AccessTokenRequest) ([]string, map[string]any, bool) {
	if a == nil || a.access == nil || !reflect.DeepEqual(*a.access, req) {
		return nil, nil, false
	}
	return a.narrowed, a.claims, true
}

// userAnswer is the user details answered to req before the transaction,
// if that was the request.
func (a *hookAnswers) userAnswer(req webhook.UserDetailsRequest) (map[string]any, bool) {
	if a == nil || a.user == nil || !reflect.DeepEqual(*a.user, req) {
		return nil, false
	}
	return maps.Clone(a.details), true
}

// issuesIDToken: an issuance for subject with scopes carries an ID token.
func (s *Service) issuesIDToken(subject string, scopes []string) bool {
	return s.Keys != nil && subject != "" && slices.Contains(scopes, ScopeOpenID)
}

// detailsOf are the user details of person p for grant g: the mapped
// attributes, then what the user details hook adds — its answer asked
// before the transaction (ahead, of a new grant) when it answered this
// request, otherwise asked here.
func (s *Service) detailsOf(ctx context.Context, f request.Facts, st store.Store, p store.Person, g store.Grant, data grantData,
	ahead *hookAnswers) (map[string]any, error) {
	req := s.userHookRequest(p, g.Scopes, data.HookParams)
	if !s.Details.UserHook.Enabled() {
		return req.Claims, nil
	}
	if details, ok := ahead.userAnswer(req); ok {
		return details, nil
	}
	return s.askUserHook(ctx, f, st, g.ClientID, req)
}

// userHookRequest is the user details hook's request for person p: its
// claims are the mapped attributes, the details without the hook.
func (s *Service) userHookRequest(p store.Person, scopes []string, params map[string][]string) webhook.UserDetailsRequest {
	return webhook.UserDetailsRequest{User: webhook.ID{ID: p.ID}, Scopes: scopes, Claims: s.MappedAttributes(p),
		ContextCustomParams: nonNil(params)}
}

// MappedAttributes are person p's attributes under the names the user
// details mapping gives them: the user details before the web hook, and
// the claims both web hooks are sent. The profile's attributes come first:
// a custom attribute (custom.<name>) never takes a key one of them has,
// nor a reserved claim name (claim.Reserved: a protocol claim, a standard
// claim, a profile attribute's name), whoever wrote the attribute and
// whatever the mapping says — config.Load refuses such a mapping, and this
// holds for any other Details too. No key is ever a protocol claim.
func (s *Service) MappedAttributes(p store.Person) map[string]any {
	out := map[string]any{}
	var custom []string
	for attr, key := range s.Details.UserDetails {
		if strings.HasPrefix(attr, customPrefix) {
			custom = append(custom, attr)
			continue
		}
		if v, ok := personAttribute(p, attr); ok && !claim.Protocol(key) {
			out[key] = v
		}
	}
	slices.Sort(custom) // two custom attributes on one key: the same one wins every time
	for _, attr := range custom {
		key := s.Details.UserDetails[attr]
		if _, taken := out[key]; taken || claim.Reserved(key) {
			continue
		}
		if v, ok := p.Custom[attr[len(customPrefix):]]; ok {
			out[key] = v
		}
	}
	return out
}

// customPrefix names a custom attribute in the user details mapping.
const customPrefix = "custom."

// askUserHook calls the user details hook with req and returns the
// details: req's claims with what the hook answered. st records a failure
// (a transaction's, or the store's before one).
func (s *Service) askUserHook(ctx context.Context, f request.Facts, st store.Store, clientID string, req webhook.UserDetailsRequest) (map[string]any, error) {
	h := s.Details.UserHook
	details := maps.Clone(req.Claims)
	var answer webhook.UserDetailsResponse
	err := h.Call(ctx, req, &answer)
	switch {
	case err != nil && h.FailClosed:
		s.Events.ObserveOAuth(ctx, st.EventSink(), f, events.OAuth{Type: events.WebhookFailed, ClientID: clientID, UserID: req.User.ID})
		return nil, err
	case err != nil:
		s.Log.WarnContext(ctx, "user details hook failed; answering the stored details", "err", err)
		s.Events.ObserveOAuth(ctx, st.EventSink(), f, events.OAuth{Type: events.WebhookFailed, ClientID: clientID, UserID: req.User.ID})
	default:
		for k, v := range answer.Claims {
			if !webhook.Protected(k) {
				details[k] = v
			}
		}
	}
	return details, nil
}

// personAttribute reads one mappable profile attribute of a person.
func personAttribute(p store.Person, attr string) (string, bool) {
	switch attr {
	case "id":
		return p.ID, true
	case "email":
		return p.Email, p.Email != ""
	case "first_name":
		return p.FirstName, p.FirstName != ""
	case "last_name":
		return p.LastName, p.LastName != ""
	case "display_name":
		// The spec's rule: the display name, or without one first name
		// plus last name.
		n := p.Profile.DisplayName
		if n == "" {
			n = strings.TrimSpace(p.FirstName + " " + p.LastName)
		}
		return n, n != ""
	case "status":
		return p.Status, p.Status != ""
	}
	return "", false
}

func nonNil(m map[string][]string) map[string][]string {
	if m == nil {
		return map[string][]string{}
	}
	return m
}

// accessHookRequest is the access token hook's request for an issuance
// to client for subject (client credentials: none) and its person p.
func (s *Service) accessHookRequest(client store.Client, subject string, scopes []string, params map[string][]string, p store.Person) webhook.AccessTokenRequest {
	req := webhook.AccessTokenRequest{Client: webhook.ID{ID: client.ID}, Scopes: scopes,
		UserClaims: map[string]any{}, ContextCustomParams: nonNil(params)}
	if subject != "" {
		req.User, req.UserClaims = &webhook.ID{ID: subject}, s.MappedAttributes(p)
	}
	return req
}

// askAccessHook lets the access token web hook narrow the scopes and add
// claims before a token is minted. Unknown scopes in removeScopes are
// ignored; removing every scope refuses the flow.
func (s *Service) askAccessHook(ctx context.Context, st store.Store, client store.Client, req webhook.AccessTokenRequest) ([]string, map[string]any, error) {
	h := s.Details.AccessHook
	var answer webhook.AccessTokenResponse
	if err := h.Call(ctx, req, &answer); err != nil {
		// st is the issuing transaction, or the store before one (askHooks):
		// inside a transaction, its event is written through it (not
		// s.Store), which would wait for the transaction's own hold.
		var subject string
		if req.User != nil {
			subject = req.User.ID
		}
		s.Events.ObserveOAuth(ctx, st.EventSink(), request.Facts{}, events.OAuth{Type: events.WebhookFailed, ClientID: client.ID, AppName: client.Name, UserID: subject})
		if h.FailClosed {
			return nil, nil, &Error{Code: ErrServerError, Description: "The access token could not be issued.", Cause: err}
		}
		s.Log.WarnContext(ctx, "access token hook failed; issuing without it", "err", err)
		return req.Scopes, nil, nil
	}
	narrowed, err := webhook.ApplyRemoval(req.Scopes, answer.RemoveScopes)
	if err != nil {
		return nil, nil, newError(ErrInvalidScope, "No scope is left for this token.")
	}
	return narrowed, answer.AdditionalClaims, nil
}
