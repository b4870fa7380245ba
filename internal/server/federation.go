package server

import (
	"net/http"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/federation"
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
	return &federation.Service{Store: s.store, Config: cim, Identity: s.identity, Hasher: s.secrets, Events: rec,
		Tokens: sealer, Issuer: s.cfg.Issuer, HTTP: &http.Client{Timeout: upstreamTimeout}, LDAPTimeout: upstreamTimeout,
		PasswordLevel: s.cfg.PasswordAuthenticationLevel, Now: s.now, Log: s.log}, nil
}
