package cimconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/pwpolicy"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
)

// Unit names: one stored document each.
const (
	UnitFeatures           = "features"
	UnitAttributes         = "attributes"
	UnitUIExtension        = "ui_extension"
	UnitStepUp             = "step_up"
	UnitLoginMethods       = "login_methods"
	UnitRedirects          = "redirects"
	UnitOrganisations      = "organisations"
	UnitKeyPairs           = "key_pairs"
	UnitCustomMessages     = "custom_messages"
	UnitEmailNotifications = "email_notifications"
	UnitPasswordPolicy     = "password_policy"
	UnitProfile            = "profile"
)

const (
	cacheTTL              = 2 * time.Second
	defaultKeyPairsPerSet = 1000
)

// Snapshot is the whole configuration; a nil unit was never set.
type Snapshot struct {
	Features           *Features
	Attributes         *Attributes
	UIExtension        *UIExtension
	StepUp             *StepUp
	LoginMethods       *LoginMethodsConfiguration
	Redirects          *Redirects
	Organisations      *Organisation
	KeyPairs           []storedKeyPair
	CustomMessages     *CustomMessages
	EmailNotifications *EmailNotificationConfiguration
	PasswordPolicy     *PasswordPolicy
	Profile            *Profile
}

// unit returns a pointer to the named unit's field.
func (s *Snapshot) unit(name string) any {
	switch name {
	case UnitFeatures:
		return &s.Features
	case UnitAttributes:
		return &s.Attributes
	case UnitUIExtension:
		return &s.UIExtension
	case UnitStepUp:
		return &s.StepUp
	case UnitLoginMethods:
		return &s.LoginMethods
	case UnitRedirects:
		return &s.Redirects
	case UnitOrganisations:
		return &s.Organisations
	case UnitKeyPairs:
		return &s.KeyPairs
	case UnitCustomMessages:
		return &s.CustomMessages
	case UnitEmailNotifications:
		return &s.EmailNotifications
	case UnitPasswordPolicy:
		return &s.PasswordPolicy
	case UnitProfile:
		return &s.Profile
	}
	panic("cimconfig: unknown unit " + name)
}

// ConfigurationAPIEnabled: on unless switched off.
func (s *Snapshot) ConfigurationAPIEnabled() bool {
	return s.Features == nil || s.Features.ConfigurationAPIEnabled == nil || *s.Features.ConfigurationAPIEnabled
}

// PersonAPIEnabled: on unless switched off (the admin API's persons).
func (s *Snapshot) PersonAPIEnabled() bool {
	return s.Features == nil || s.Features.PersonAPIEnabled == nil || *s.Features.PersonAPIEnabled
}

// EventsAPIEnabled: on unless switched off.
func (s *Snapshot) EventsAPIEnabled() bool {
	return s.Features == nil || s.Features.EventsAPIEnabled == nil || *s.Features.EventsAPIEnabled
}

func decodeSnapshot(bodies map[string]string) (*Snapshot, error) {
	s := &Snapshot{}
	for name, body := range bodies {
		if body == "" {
			continue
		}
		if err := json.Unmarshal([]byte(body), s.unit(name)); err != nil {
			return nil, fmt.Errorf("stored configuration unit %s: %w", name, err)
		}
	}
	return s, nil
}

// Service reads and writes the configuration. Reads are cached for a
// moment; a write through this instance is seen at once, other instances
// see it within cacheTTL.
type Service struct {
	Store store.Store
	Keys  *seal.Sealer // private keys of key pairs
	// Secrets seals the login methods' client secrets and bind passwords
	// (secrets.go); nil: a unit that sends one is refused.
	Secrets *seal.Sealer
	Events  *events.Recorder
	// Breached answers the password policy's breached_password_blocked (nil: not checked).
	Breached *pwpolicy.RangeChecker
	Now      func() time.Time

	mu      sync.Mutex
	cached  *Snapshot
	fetched time.Time
}

// Snapshot returns the current configuration (read-only: do not modify).
func (s *Service) Snapshot(ctx context.Context) (*Snapshot, error) {
	s.mu.Lock()
	if s.cached != nil && s.Now().Sub(s.fetched) < cacheTTL {
		c := s.cached
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	bodies, err := s.Store.GetConfigUnits(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := decodeSnapshot(bodies)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.cached, s.fetched = snap, s.Now()
	s.mu.Unlock()
	return snap, nil
}

// Forget drops the cached snapshot.
func (s *Service) Forget() {
	s.mu.Lock()
	s.cached = nil
	s.mu.Unlock()
}

// Update locks the named units and lets fn change them on a snapshot that
// holds their current values (other units are nil); the named units are
// written as fn leaves them. fn's error writes nothing.
func (s *Service) Update(ctx context.Context, names []string, fn func(*Snapshot) error) error {
	defer s.Forget()
	return s.Store.UpdateConfigUnits(ctx, names, func(old map[string]string) (map[string]string, error) {
		snap, err := decodeSnapshot(old)
		if err != nil {
			return nil, err
		}
		if err := fn(snap); err != nil {
			return nil, err
		}
		out := make(map[string]string, len(names))
		for _, n := range names {
			v := s.unitValue(snap, n)
			if v == nil {
				out[n] = ""
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			out[n] = string(b)
		}
		return out, nil
	})
}

// unitValue is the unit's value, nil when unset.
func (s *Service) unitValue(snap *Snapshot, name string) any {
	if name == UnitKeyPairs {
		if snap.KeyPairs == nil {
			return nil
		}
		return snap.KeyPairs
	}
	v := snap.unit(name)
	// Every other unit is a pointer to a pointer of a struct.
	b, _ := json.Marshal(v)
	if string(b) == "null" {
		return nil
	}
	return v
}

// record writes a configuration event with the API user as agent.
func (s *Service) record(ctx context.Context, r *http.Request, typ, agent string) {
	if s.Events == nil {
		return
	}
	s.Events.ObserveOAuth(ctx, s.Store.EventSink(), request.Of(r), events.OAuth{Type: typ, AgentUser: agent})
}

func newID() string { return uuid.NewString() }

// assignIDs gives each whitelisted URL an id: the id a stored entry with
// the same URL has, else a fresh one. Ids are read-only: sent ids are not kept.
func assignIDs(urls, stored []WhitelistedURL) []WhitelistedURL {
	known := map[string]string{}
	for _, w := range stored {
		known[w.URL] = w.ID
	}
	out := make([]WhitelistedURL, len(urls))
	for i, w := range urls {
		id := known[w.URL]
		if id == "" {
			id = newID()
		}
		out[i] = WhitelistedURL{ID: id, URL: w.URL}
	}
	return out
}

// ErrNotFound: no such whitelisted URL, message or certificate.
var ErrNotFound = errors.New("not found")

// Messages returns the custom texts of a language: the default map, then
// the language's own. A store failure leaves the built-in texts.
func (s *Service) Messages(lang string) map[string]string {
	snap, err := s.Snapshot(context.Background())
	if err != nil || snap.CustomMessages == nil {
		return nil
	}
	c := snap.CustomMessages
	out := make(map[string]string, len(c.Default))
	for k, v := range c.Default {
		out[k] = v
	}
	for k, v := range c.Locales[lang] {
		out[k] = v
	}
	return out
}

// LogoutTarget applies the redirects unit to a logout: a requested address
// must be on url_whitelist, or be url_after_logout or default_origin_url
// themselves (exact match, as RFC 9700 asks of redirect URIs); without one
// the browser goes to url_after_logout when set. Both pass the redirect
// URI rule here again, at the decision: a unit stored before the rule may
// hold a javascript: or cleartext address. A refused default is dropped
// (the signed-out page), a refused request refused.
func (s *Service) LogoutTarget(ctx context.Context, requested string) (string, bool, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return "", false, err
	}
	rd := snap.Redirects
	allowed := func(u string) bool { return client.ValidateRedirectURI(u, client.RedirectPolicy{}) == nil }
	if requested == "" {
		if rd != nil && rd.URLAfterLogout != nil && allowed(*rd.URLAfterLogout) {
			return *rd.URLAfterLogout, true, nil
		}
		return "", true, nil
	}
	return requested, rd != nil && rd.Allows(requested) && allowed(requested), nil
}

// Allows reports whether a redirect to u is allowed.
func (r *Redirects) Allows(u string) bool {
	for _, w := range r.URLWhitelist {
		if w.URL == u {
			return true
		}
	}
	for _, p := range []*string{r.URLAfterLogout, r.URLAfterLogin, r.DefaultOriginURL} {
		if p != nil && *p == u {
			return true
		}
	}
	return false
}
