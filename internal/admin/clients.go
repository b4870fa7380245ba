package admin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// ClientInput is a client as the admin API's body spells it: the config
// file's client keys (internal/config/clients.go). A member left out takes
// the config file's default; PUT replaces every member.
type ClientInput struct {
	ClientID                string          `json:"client_id"`
	ClientSecret            string          `json:"client_secret"`
	ClientSecretHash        string          `json:"client_secret_hash"`
	Name                    string          `json:"name"`
	TokenEndpointAuthMethod string          `json:"token_endpoint_auth_method"`
	JWKS                    json.RawMessage `json:"jwks"`
	JWKSURI                 string          `json:"jwks_uri"`
	RedirectURIs            []string        `json:"redirect_uris"`
	GrantTypes              []string        `json:"grant_types"`
	Scopes                  []string        `json:"scopes"`
	ConsentRequired         *bool           `json:"consent_required"`
	AllowPlainPKCE          bool            `json:"allow_plain_pkce"`
	AccessTokenLifetime     string          `json:"access_token_lifetime"`
	RefreshTokenLifetime    string          `json:"refresh_token_lifetime"`
	AppIdentifier           string          `json:"app_identifier"`
	AppPlatform             string          `json:"app_platform"`
	AppVersion              string          `json:"app_version"`
	IntrospectAnyToken      bool            `json:"introspect_any_token"`
	DeviceApprovalClients   []string        `json:"device_approval_clients"`
	PostLogoutRedirectURIs  []string        `json:"post_logout_redirect_uris"`
	AccessTokenFormat       string          `json:"access_token_format"`
}

// Sources of a client (the "source" member of a read).
const (
	SourceConfig  = "config"  // the config file: read-only here
	SourceAPI     = "api"     // the admin API or the CLI
	SourceDynamic = "dynamic" // dynamic registration (RFC 7591)
)

// Client is a client as the admin API answers it: never a secret nor a
// secret's hash.
type Client struct {
	store.Client
	Source string
}

func (s *Service) entry(c store.Client) Client {
	src := SourceAPI
	switch {
	case s.Store.IsStatic(c.ID):
		src = SourceConfig
	case len(c.RegistrationHash) > 0:
		src = SourceDynamic
	}
	return Client{Client: c, Source: src}
}

// Bounds of a client's members: generous, and small enough that a client
// stays a small row that every token request reads.
const (
	maxListItems  = 100
	maxItemLength = 2048
	maxName       = 200
	maxLifetime   = 10 * 365 * 24 * time.Hour
	secretBytes   = 32 // a generated secret: 256 bits
)

// Defaults of the config file (config.DefaultAccessTokenLifetime, ...).
const (
	defaultAccessLifetime  = time.Hour
	defaultRefreshLifetime = 30 * 24 * time.Hour
)

// registration turns in into the client of id, with the config file's
// defaults, and checks what client.Registration.Validate does not: list
// sizes, lifetimes, and the URLs latchkey fetches (jwks_uri), which are
// the caller's and so go through the outbound guard's rule. The secret is
// left to the caller.
func (s *Service) registration(in ClientInput, id string) (client.Registration, error) {
	var r client.Registration
	for field, list := range map[string][]string{"redirect_uris": in.RedirectURIs, "grant_types": in.GrantTypes,
		"scopes": in.Scopes, "device_approval_clients": in.DeviceApprovalClients,
		"post_logout_redirect_uris": in.PostLogoutRedirectURIs} {
		if len(list) > maxListItems {
			return r, invalid(field, "%s: at most %d items", field, maxListItems)
		}
		for _, v := range list {
			if len(v) > maxItemLength {
				return r, invalid(field, "%s: an item is longer than %d bytes", field, maxItemLength)
			}
		}
	}
	if len(in.Name) > maxName {
		return r, invalid("name", "name is longer than %d bytes", maxName)
	}
	for field, v := range map[string]string{"jwks_uri": in.JWKSURI, "app_identifier": in.AppIdentifier,
		"app_version": in.AppVersion, "client_secret_hash": in.ClientSecretHash} {
		if len(v) > maxItemLength {
			return r, invalid(field, "%s is longer than %d bytes", field, maxItemLength)
		}
	}
	if err := s.checkFetchedURL("jwks_uri", in.JWKSURI); err != nil {
		return r, err
	}
	access, err := lifetime("access_token_lifetime", in.AccessTokenLifetime, defaultAccessLifetime)
	if err != nil {
		return r, err
	}
	refresh, err := lifetime("refresh_token_lifetime", in.RefreshTokenLifetime, defaultRefreshLifetime)
	if err != nil {
		return r, err
	}
	jwks := []byte(in.JWKS)
	if string(jwks) == "null" {
		jwks = nil
	}
	if len(jwks) > 0 {
		if !json.Valid(jwks) || jwks[0] != '{' {
			return r, invalid("jwks", `jwks must be a JSON Web Key Set object {"keys": [...]}`)
		}
	}
	r.Client = store.Client{ID: id, SecretPHC: in.ClientSecretHash, Name: in.Name,
		TokenEndpointAuthMethod: in.TokenEndpointAuthMethod, JWKS: jwks, JWKSURI: in.JWKSURI,
		RedirectURIs: in.RedirectURIs, GrantTypes: in.GrantTypes, Scopes: in.Scopes, ConsentRequired: true,
		AllowPlainPKCE: in.AllowPlainPKCE, AccessTokenLifetime: access, RefreshTokenLifetime: refresh,
		AppIdentifier: in.AppIdentifier, AppPlatform: in.AppPlatform, AppVersion: in.AppVersion,
		IntrospectAnyToken: in.IntrospectAnyToken, DeviceApprovalClients: in.DeviceApprovalClients,
		PostLogoutRedirectURIs: in.PostLogoutRedirectURIs, AccessTokenFormat: in.AccessTokenFormat}
	r.Secret = in.ClientSecret
	if in.ConsentRequired != nil {
		r.ConsentRequired = *in.ConsentRequired
	}
	if r.TokenEndpointAuthMethod == "" {
		r.TokenEndpointAuthMethod = client.DefaultAuthMethod(len(jwks) > 0 || in.JWKSURI != "",
			in.ClientSecret != "" || in.ClientSecretHash != "")
	}
	if len(r.GrantTypes) == 0 {
		r.GrantTypes = client.DefaultGrantTypes()
	}
	return r, nil
}

// lifetime parses a duration member ("1h", "720h", "90s").
func lifetime(field, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > maxLifetime {
		return 0, invalid(field, "%s %q is not a duration from 1s to %s (e.g. 1h, 720h)", field, clip(v), config.FormatDuration(maxLifetime))
	}
	return d, nil
}

// usesSecret reports whether clients of method authenticate with a secret.
func usesSecret(method string) bool {
	return method == client.AuthClientSecretBasic || method == client.AuthClientSecretPost
}

// validate applies the client rules; a broken rule names its member.
func validate(r client.Registration) error {
	err := r.Validate()
	var fe *client.FieldError
	if errors.As(err, &fe) {
		return &InvalidError{Field: fe.Field, Msg: fe.Msg}
	}
	return err
}

func (s *Service) hashSecret(secret string) []byte {
	return s.Secrets.Hash(token.LabelClientSecret, secret)
}

// newSecret is a generated client secret: 256 random bits.
func newSecret() string { return token.Random(secretBytes) }

// CreateClient creates a client from in (client_id generated when absent)
// and records ADMIN_CLIENT_CREATED in the same transaction. A client that
// authenticates with a secret and names none gets a generated one: secret
// is it, shown only in this answer. ErrConflict for a taken client_id.
func (s *Service) CreateClient(ctx context.Context, a Actor, in ClientInput) (c Client, secret string, err error) {
	id := in.ClientID
	if id == "" {
		id = uuid.NewString()
	}
	r, err := s.registration(in, id)
	if err != nil {
		return c, "", err
	}
	if usesSecret(r.TokenEndpointAuthMethod) && r.Secret == "" && r.SecretPHC == "" {
		secret = newSecret()
		r.Secret = secret
	}
	if err := validate(r); err != nil {
		return c, "", err
	}
	stored := r.Stored(s.hashSecret)
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		if err := tx.CreateClient(ctx, stored); err != nil {
			return err
		}
		return s.clientEvent(ctx, tx, a, events.AdminClientCreated, stored)
	})
	if errors.Is(err, store.ErrConflict) {
		return c, "", ErrConflict
	}
	if err != nil {
		return c, "", err
	}
	c, err = s.GetClient(ctx, id)
	return c, secret, err
}

func (s *Service) clientEvent(ctx context.Context, tx store.Store, a Actor, typ string, c store.Client) error {
	return s.Events.RecordOAuth(ctx, tx, a.Facts, events.OAuth{Type: typ, ClientID: c.ID, AppName: c.Name, AgentUser: a.Name})
}

// GetClient returns a client of the store or of the config file.
func (s *Service) GetClient(ctx context.Context, id string) (Client, error) {
	c, err := s.Store.GetClient(ctx, id)
	if err != nil {
		return Client{}, notFound(err)
	}
	return s.entry(c), nil
}

// ListClients returns a page of every client (the config file's among
// them), by client_id, and how many there are.
func (s *Service) ListClients(ctx context.Context, offset, limit int) ([]Client, int, error) {
	all, err := s.Store.ListClients(ctx)
	if err != nil {
		return nil, 0, err
	}
	total := len(all)
	all = all[min(offset, total):]
	all = all[:min(limit, len(all))]
	out := make([]Client, len(all))
	for i, c := range all {
		out[i] = s.entry(c)
	}
	return out, total, nil
}

// update runs fn on the client under its row lock, after the If-Match
// check (revision 0: none), and records typ with it in one transaction.
func (s *Service) update(ctx context.Context, a Actor, id string, revision int64, typ string,
	fn func(store.Client) (store.Client, error)) (Client, error) {
	if s.Store.IsStatic(id) {
		return Client{}, ErrReadOnly
	}
	var out store.Client
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		var err error
		out, err = tx.UpdateClient(ctx, id, func(old store.Client) (store.Client, error) {
			if revision != 0 && old.Revision != revision {
				return old, ErrChangedSinceRevision
			}
			return fn(old)
		})
		if err != nil {
			return err
		}
		return s.clientEvent(ctx, tx, a, typ, out)
	})
	if err != nil {
		return Client{}, notFound(err)
	}
	return s.entry(out), nil
}

// ReplaceClient replaces every member of a client by in (PUT), keeping
// its secret while its method uses one. A client that newly authenticates
// with a secret gets a generated one (secret). revision, when not 0, must
// be the current revision (If-Match), or nothing changes: ErrChangedSinceRevision.
func (s *Service) ReplaceClient(ctx context.Context, a Actor, id string, revision int64, in ClientInput) (c Client, secret string, err error) {
	if in.ClientID != "" && in.ClientID != id {
		return c, "", invalid("client_id", "client_id must be the client of the path, %q", clip(id))
	}
	if in.ClientSecret != "" {
		return c, "", invalid("client_secret", "client_secret cannot be set by PUT: rotate it with POST /api/v1/clients/{client_id}/secret")
	}
	r, err := s.registration(in, id)
	if err != nil {
		return c, "", err
	}
	c, err = s.update(ctx, a, id, revision, events.AdminClientUpdated, func(old store.Client) (store.Client, error) {
		r := r // fn may run again: start from the input each time
		secret = ""
		switch {
		case !usesSecret(r.TokenEndpointAuthMethod):
		case r.SecretPHC != "":
		case len(old.SecretHash) > 0 || old.SecretPHC != "":
			r.SecretHash, r.SecretPHC = old.SecretHash, old.SecretPHC
		default:
			secret = newSecret()
			r.Secret = secret
		}
		r.RegistrationHash = old.RegistrationHash
		if err := validate(r); err != nil {
			return old, err
		}
		return r.Stored(s.hashSecret), nil
	})
	return c, secret, err
}

// RotateSecret gives a client a new generated secret: the old one fails
// from the commit on, on every instance. revision as for ReplaceClient.
func (s *Service) RotateSecret(ctx context.Context, a Actor, id string, revision int64) (c Client, secret string, err error) {
	secret = newSecret()
	c, err = s.update(ctx, a, id, revision, events.AdminClientUpdated, func(old store.Client) (store.Client, error) {
		if !usesSecret(old.TokenEndpointAuthMethod) {
			return old, invalid("token_endpoint_auth_method", "the client authenticates with %s, not with a secret",
				old.TokenEndpointAuthMethod)
		}
		old.SecretHash, old.SecretPHC = s.hashSecret(secret), ""
		return old, nil
	})
	if err != nil {
		return c, "", err
	}
	return c, secret, nil
}

// DeleteClient deletes a client and revokes its tokens in one
// transaction, with ADMIN_CLIENT_DELETED. revision as for ReplaceClient.
func (s *Service) DeleteClient(ctx context.Context, a Actor, id string, revision int64) (store.ClientRevocation, error) {
	if s.Store.IsStatic(id) {
		return store.ClientRevocation{}, ErrReadOnly
	}
	var out store.ClientRevocation
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		// The revision is checked under the row lock, which the delete
		// then holds on to: no write slips in between.
		c, err := tx.UpdateClient(ctx, id, func(old store.Client) (store.Client, error) {
			if revision != 0 && old.Revision != revision {
				return old, ErrChangedSinceRevision
			}
			return old, nil
		})
		if err != nil {
			return err
		}
		if out, err = tx.DeleteClient(ctx, id, s.now()); err != nil {
			return err
		}
		return s.clientEvent(ctx, tx, a, events.AdminClientDeleted, c)
	})
	return out, notFound(err)
}

// clip keeps values echoed in messages short.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// defaultOutbound is the guard's rule without exceptions (a Service
// without Outbound).
var defaultOutbound = outbound.MustNew(outbound.Options{})

// checkFetchedURL refuses a URL latchkey would fetch that is not https or
// names an internal address (outbound.Client.CheckURL), with one text
// whatever was wrong; outbound.allow's hosts and ranges pass.
func (s *Service) checkFetchedURL(field, u string) error {
	if u == "" {
		return nil
	}
	ob := s.Outbound
	if ob == nil {
		ob = defaultOutbound
	}
	if err := ob.CheckURL(u); err != nil {
		return invalid(field, "%s: %v", field, err)
	}
	return nil
}
