package server

import (
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/seal"
)

// upstreamTimeout bounds each call to an upstream identity provider: a
// person waits on it.
const upstreamTimeout = 10 * time.Second

// newFederation builds the sign-in at the configured login methods.
func (s *Server) newFederation(cim *cimconfig.Service, serverKey []byte, rec *events.Recorder) (*federation.Service, error) {
	sealer, err := seal.New(serverKey, "upstream-id-tokens")
	if err != nil {
		return nil, err
	}
	// Login methods (discovery, token, UserInfo, JWKS URLs, LDAP
	// server_urls) are set through the configuration API: a caller's
	// URLs, fetched through the outbound guard (outbound.allow applies).
	ob, err := outbound.New(outbound.Options{Allow: s.cfg.Outbound.Allow, Timeout: upstreamTimeout})
	if err != nil {
		return nil, err
	}
	return &federation.Service{Store: s.store, Config: cim, Identity: s.identity, Hasher: s.secrets, Events: rec,
		Tokens: sealer, Issuer: s.cfg.Issuer, HTTP: ob.HTTPClient(), Outbound: ob, LDAPTimeout: upstreamTimeout,
		PasswordLevel: s.cfg.PasswordAuthenticationLevel, Now: s.now, Log: s.log}, nil
}

// Federation is the login methods' service (tests).
func (s *Server) Federation() *federation.Service { return s.pages.Federation }
