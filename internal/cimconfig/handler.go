package cimconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
)

// maxBodyBytes bounds a configuration request (logos travel as base64).
const maxBodyBytes = 1 << 20

// Handler serves the configuration API. Answers without a body (401, 405,
// 409, and 500 of the disabled v1 API) follow the spec's "Error body: no
// content"; 400, 404, 413 and 415 carry {"error", "error_description",
// "details"} naming every problem, so a rejected unit is easy to fix.
type Handler struct {
	Service *Service
	Users   *clientauth.BasicUsers
	// Reload re-reads overridden templates and messages (may be nil).
	Reload func() error
}

// api versions: how a disabled API answers.
const (
	v1 = http.StatusInternalServerError // "Api disabled"
	v2 = http.StatusConflict
)

// guard authenticates the API user and checks the API is on; it answers
// and returns ok=false when the request must stop.
func (h *Handler) guard(w http.ResponseWriter, r *http.Request, disabled int) (agent string, snap *Snapshot, ok bool, err error) {
	user, good, err := h.Users.Guard(w, r)
	if !good {
		return "", nil, false, err
	}
	snap, err = h.Service.Snapshot(r.Context())
	if err != nil {
		return "", nil, false, err
	}
	if !snap.ConfigurationAPIEnabled() {
		w.WriteHeader(disabled)
		return "", nil, false, nil
	}
	return user, snap, true, nil
}

func badRequest(err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return &httpx.Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Description: "The configuration is not valid.", Details: ve.Problems}
	}
	return err
}

func notFound(what string) error {
	return httpx.Errorf(http.StatusNotFound, "not_found", "No %s with that id.", what)
}

func (h *Handler) decode(w http.ResponseWriter, r *http.Request, dst any) error {
	return httpx.DecodeJSON(w, r, dst, maxBodyBytes)
}

// unitOf returns a fresh value to decode the named unit into.
func unitOf(name string) any {
	switch name {
	case UnitFeatures:
		return &Features{}
	case UnitAttributes:
		return &Attributes{}
	case UnitUIExtension:
		return &UIExtension{}
	case UnitStepUp:
		return &StepUp{}
	case UnitLoginMethods:
		return &LoginMethodsConfiguration{}
	case UnitRedirects:
		return &Redirects{}
	case UnitOrganisations:
		return &Organisation{}
	case UnitCustomMessages:
		return &CustomMessages{}
	case UnitEmailNotifications:
		return &EmailNotificationConfiguration{}
	case UnitPasswordPolicy:
		return &PasswordPolicy{}
	case UnitProfile:
		return &Profile{}
	}
	panic("cimconfig: no type for unit " + name)
}

// setUnit stores v (a pointer to the unit's type) into the snapshot.
func setUnit(snap *Snapshot, name string, v any) {
	switch name {
	case UnitFeatures:
		snap.Features = v.(*Features)
	case UnitAttributes:
		snap.Attributes = v.(*Attributes)
	case UnitUIExtension:
		snap.UIExtension = v.(*UIExtension)
	case UnitStepUp:
		snap.StepUp = v.(*StepUp)
	case UnitLoginMethods:
		snap.LoginMethods = v.(*LoginMethodsConfiguration)
	case UnitRedirects:
		snap.Redirects = v.(*Redirects)
	case UnitOrganisations:
		snap.Organisations = v.(*Organisation)
	case UnitCustomMessages:
		snap.CustomMessages = v.(*CustomMessages)
	case UnitEmailNotifications:
		snap.EmailNotifications = v.(*EmailNotificationConfiguration)
	case UnitPasswordPolicy:
		snap.PasswordPolicy = v.(*PasswordPolicy)
	case UnitProfile:
		snap.Profile = v.(*Profile)
	}
}

// keepIDs gives the whitelisted URLs of a new unit their ids.
func keepIDs(old, snap *Snapshot) {
	if f := snap.Features; f != nil && f.ActionToken != nil {
		f.ActionToken.WhitelistedURLs = assignIDs(f.ActionToken.WhitelistedURLs, ActionTokenURLs.get(old))
	}
	if rd := snap.Redirects; rd != nil {
		rd.URLWhitelist = assignIDs(rd.URLWhitelist, RedirectURLs.get(old))
	}
}

func eventFor(units ...string) string {
	if slices.Contains(units, UnitFeatures) {
		return events.AdminFeaturesUpdated
	}
	return events.AdminConfigUpdated
}

func (h *Handler) GetUnit(name string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, snap, ok, err := h.guard(w, r, v2)
		if !ok {
			return err
		}
		v := h.Service.unitValue(snap, name)
		if name == UnitLoginMethods && snap.LoginMethods != nil {
			v = publicLoginMethods(snap.LoginMethods) // never the secrets
		}
		if v == nil {
			v = struct{}{}
		}
		httpx.WriteJSON(w, http.StatusOK, v)
		return nil
	}
}

// PostUnit replaces a unit after validating all of it: a bad unit changes nothing.
func (h *Handler) PostUnit(name string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		agent, _, ok, err := h.guard(w, r, v2)
		if !ok {
			return err
		}
		v := unitOf(name)
		if err := h.decode(w, r, v); err != nil {
			return err
		}
		var p problems
		validateValue(&p, name, v)
		if err := p.err(); err != nil {
			return badRequest(err)
		}
		err = h.Service.Update(r.Context(), []string{name}, func(snap *Snapshot) error {
			old := *snap
			setUnit(snap, name, v)
			keepIDs(&old, snap)
			return h.Service.sealSecrets(&old, snap)
		})
		if err != nil {
			return err
		}
		h.Service.record(r.Context(), r, eventFor(name), agent)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

// configUpdate is the body of POST /api/v2/config: any set of units, in
// the v2 shape (CIMConfiguration's members, each optional here), plus the
// v1 members (password_policy, messages, profile).
type configUpdate struct {
	CustomMessages     *CustomMessages                 `json:"custom_messages,omitempty"`
	Features           *Features                       `json:"features,omitempty"`
	Attributes         *Attributes                     `json:"attributes,omitempty"`
	UIExtension        *UIExtension                    `json:"ui_extension,omitempty"`
	StepUp             *StepUp                         `json:"step_up,omitempty"`
	LoginMethods       *LoginMethodsConfiguration      `json:"login_methods,omitempty"`
	Redirects          *Redirects                      `json:"redirects,omitempty"`
	Organisations      *Organisation                   `json:"organisations,omitempty"`
	KeyPairs           []KeyPair                       `json:"key_pairs,omitempty"`
	PasswordPolicy     *PasswordPolicy                 `json:"password_policy,omitempty"`
	Messages           map[string]map[string]string    `json:"messages,omitempty"`
	Profile            *Profile                        `json:"profile,omitempty"`
	EmailNotifications *EmailNotificationConfiguration `json:"email_notifications,omitempty"`
}

func (h *Handler) PostV2(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	var u configUpdate
	if err := h.decode(w, r, &u); err != nil {
		return err
	}
	var p problems
	if u.Messages != nil {
		if u.CustomMessages != nil {
			p.add("messages", "send either messages or custom_messages, not both")
		}
		u.CustomMessages = messagesFromV1(u.Messages)
	}
	units := map[string]any{}
	for name, v := range map[string]any{
		UnitFeatures: u.Features, UnitAttributes: u.Attributes, UnitUIExtension: u.UIExtension, UnitStepUp: u.StepUp,
		UnitLoginMethods: u.LoginMethods, UnitRedirects: u.Redirects, UnitOrganisations: u.Organisations,
		UnitCustomMessages: u.CustomMessages, UnitPasswordPolicy: u.PasswordPolicy, UnitProfile: u.Profile,
		UnitEmailNotifications: u.EmailNotifications,
	} {
		if !isNil(v) {
			units[name] = v
			validateValue(&p, name, v)
		}
	}
	var keys [][]byte
	if u.KeyPairs != nil {
		for i, k := range u.KeyPairs {
			keys = append(keys, validateKeyPair(k, &p, keyPairPath(i)))
		}
		checkUniqueNames(&p, u.KeyPairs)
	}
	if err := p.err(); err != nil {
		return badRequest(err)
	}
	names := make([]string, 0, len(units)+1)
	for name := range units {
		names = append(names, name)
	}
	if u.KeyPairs != nil {
		names = append(names, UnitKeyPairs)
	}
	if len(names) == 0 {
		return httpx.Errorf(http.StatusBadRequest, "invalid_request", "The body holds no configuration unit.")
	}
	slices.Sort(names)
	err = h.Service.Update(r.Context(), names, func(snap *Snapshot) error {
		old := *snap
		for name, v := range units {
			setUnit(snap, name, v)
		}
		keepIDs(&old, snap)
		if u.KeyPairs != nil {
			snap.KeyPairs = h.Service.sealAll(u.KeyPairs, keys, old.KeyPairs)
		}
		return h.Service.sealSecrets(&old, snap)
	})
	if err != nil {
		return err
	}
	h.Service.record(r.Context(), r, eventFor(names...), agent)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func isNil(v any) bool {
	switch x := v.(type) {
	case *Features:
		return x == nil
	case *Attributes:
		return x == nil
	case *UIExtension:
		return x == nil
	case *StepUp:
		return x == nil
	case *LoginMethodsConfiguration:
		return x == nil
	case *Redirects:
		return x == nil
	case *Organisation:
		return x == nil
	case *CustomMessages:
		return x == nil
	case *PasswordPolicy:
		return x == nil
	case *Profile:
		return x == nil
	case *EmailNotificationConfiguration:
		return x == nil
	}
	return v == nil
}

// validateValue validates a decoded unit value.
func validateValue(p *problems, name string, v any) {
	switch x := v.(type) {
	case *Features:
		x.validate(p, name)
	case *UIExtension:
		x.validate(p, name)
	case *StepUp:
		x.validate(p, name)
	case *LoginMethodsConfiguration:
		x.validate(p, name)
	case *Redirects:
		x.validate(p, name)
	case *Organisation:
		x.validate(p, name)
	case *CustomMessages:
		x.validate(p, name)
	case *PasswordPolicy:
		x.validate(p, name)
	case *Profile:
		x.validate(p, name)
	}
}

func messagesFromV1(m map[string]map[string]string) *CustomMessages {
	c := &CustomMessages{}
	for loc, msgs := range m {
		if loc == "default" {
			c.Default = msgs
			continue
		}
		if c.Locales == nil {
			c.Locales = map[string]map[string]string{}
		}
		c.Locales[loc] = msgs
	}
	return c
}

func (h *Handler) GetV2(w http.ResponseWriter, r *http.Request) error {
	_, snap, ok, err := h.guard(w, r, v2)
	if !ok {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, CIMConfiguration{
		CustomMessages: orEmpty(snap.CustomMessages), Features: orEmpty(snap.Features),
		Attributes: orEmpty(snap.Attributes), UIExtension: orEmpty(snap.UIExtension), StepUp: orEmpty(snap.StepUp),
		LoginMethods: orEmpty(publicLoginMethods(snap.LoginMethods)), Redirects: orEmpty(snap.Redirects),
		Organisations: orEmpty(snap.Organisations), KeyPairs: publicPairs(snap.KeyPairs),
	})
	return nil
}

// orEmpty answers a unit never set as its empty value.
func orEmpty[T any](v *T) *T {
	if v == nil {
		return new(T)
	}
	return v
}

// v1Fields are the members GET /api/config can be asked for.
var v1Fields = []string{"password_policy", "messages", "profile"}

func (h *Handler) GetV1(w http.ResponseWriter, r *http.Request) error {
	_, snap, ok, err := h.guard(w, r, v1)
	if !ok {
		return err
	}
	// fields may repeat or be a comma-separated list.
	want := map[string]bool{}
	for _, f := range r.URL.Query()["fields"] {
		for _, name := range strings.Split(f, ",") {
			name = strings.TrimSpace(name)
			if !slices.Contains(v1Fields, name) {
				return httpx.Errorf(http.StatusBadRequest, "invalid_request", "Unknown field %q: choose among %s.",
					name, strings.Join(v1Fields, ", "))
			}
			want[name] = true
		}
	}
	c := Configuration{PasswordPolicy: snap.PasswordPolicy, Messages: map[string]map[string]string{},
		Profile: orEmpty(snap.Profile)}
	if m := snap.CustomMessages; m != nil {
		if m.Default != nil {
			c.Messages["default"] = m.Default
		}
		for loc, msgs := range m.Locales {
			c.Messages[loc] = msgs
		}
	}
	if len(want) == 0 {
		httpx.WriteJSON(w, http.StatusOK, c)
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	for name := range members {
		if !want[name] {
			delete(members, name)
		}
	}
	httpx.WriteJSON(w, http.StatusOK, members)
	return nil
}

func (h *Handler) ReloadExtensions(w http.ResponseWriter, r *http.Request) error {
	agent, _, ok, err := h.guard(w, r, v1)
	if !ok {
		return err
	}
	h.Service.Forget()
	if h.Reload != nil {
		if err := h.Reload(); err != nil {
			return fmt.Errorf("reload templates and messages: %w", err)
		}
	}
	h.Service.record(r.Context(), r, events.AdminExtensionEngineReloaded, agent)
	w.WriteHeader(http.StatusOK)
	return nil
}

// IdentityProviders lists the identity providers persons can sign in or
// be linked with: the configured login methods, and the built-in username
// and password unless a login method of that type replaces it.
func IdentityProviders(snap *Snapshot) []IdentityProviderConfig {
	var out []IdentityProviderConfig
	password := false
	if lm := snap.LoginMethods; lm != nil {
		for _, m := range lm.LoginMethods {
			if m.ID == nil || m.Type == nil || (m.Enabled != nil && !*m.Enabled) {
				continue
			}
			c := IdentityProviderConfig{ID: *m.ID, Type: *m.Type}
			if m.Name != nil {
				c.Name = *m.Name
			}
			if *m.Type == identity.PasswordIdPType {
				password = true
			}
			if a := m.SAMLAttributes; a != nil {
				c.SAMLProperties = &SAMLProperties{}
				if len(a.AuthenticationLevelMappings) > 0 && a.AuthenticationLevelMappings[0].AuthnContextClassRefName != nil {
					c.SAMLProperties.AuthnContext = *a.AuthenticationLevelMappings[0].AuthnContextClassRefName
				}
			}
			out = append(out, c)
		}
	}
	if !password {
		out = append([]IdentityProviderConfig{{ID: identity.PasswordIdPID, Name: "Username and password",
			Type: identity.PasswordIdPType}}, out...)
	}
	return out
}

// IdPs maps identity provider ids (lower case) to their types, for the import API.
func (s *Service) IdPs(ctx context.Context) (map[string]string, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range IdentityProviders(snap) {
		out[strings.ToLower(p.ID)] = p.Type
	}
	return out, nil
}

func (h *Handler) IdentityProviders(w http.ResponseWriter, r *http.Request) error {
	_, snap, ok, err := h.guard(w, r, v1)
	if !ok {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, IdentityProviderConfigResultSet{Result: IdentityProviders(snap)})
	return nil
}
