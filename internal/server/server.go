// Package server wires latchkey together: config -> store -> services ->
// routes (routes.go lists every route of the interface).
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Server holds the dependencies every handler shares.
type Server struct {
	cfg     *config.Config
	store   store.Store
	log     *slog.Logger
	secrets *token.Hasher
	metrics *metrics
	now     func() time.Time
	handler http.Handler
}

// New builds a Server on an opened, migrated store, and writes the static
// clients of cfg into it.
func New(ctx context.Context, cfg *config.Config, st store.Store, logger *slog.Logger, serverKey []byte) (*Server, error) {
	h, err := token.NewHasher(serverKey)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		store:   st,
		log:     logger,
		secrets: h,
		metrics: newMetrics(),
		now:     time.Now,
	}
	if err := s.seedClients(ctx); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	s.routes(mux)
	s.handler = httpx.WithRequestID(
		httpx.SecurityHeaders(strings.HasPrefix(cfg.Issuer, "https://"))(
			httpx.Observe(logger, s.metrics.observe)(mux)))
	return s, nil
}

// Handler is the whole HTTP interface.
func (s *Server) Handler() http.Handler { return s.handler }

// seedClients creates or updates the config's static clients in one
// transaction, so a bad client leaves the store as it was.
func (s *Server) seedClients(ctx context.Context) error {
	return s.store.Tx(ctx, func(tx store.Store) error {
		for _, c := range s.cfg.Clients {
			sc, err := s.storeClient(c)
			if err != nil {
				return fmt.Errorf("client %s: %w", c.ClientID, err)
			}
			if err := tx.UpsertClient(ctx, sc); err != nil {
				return fmt.Errorf("client %s: %w", c.ClientID, err)
			}
		}
		return nil
	})
}

func (s *Server) storeClient(c config.Client) (store.Client, error) {
	jwks, err := c.JWKSJSON()
	if err != nil {
		return store.Client{}, err
	}
	sc := store.Client{
		ID:                      c.ClientID,
		SecretPHC:               c.ClientSecretHash,
		Name:                    c.Name,
		TokenEndpointAuthMethod: c.TokenEndpointAuthMethod,
		JWKS:                    jwks,
		JWKSURI:                 c.JWKSURI,
		RedirectURIs:            c.RedirectURIs,
		GrantTypes:              c.GrantTypes,
		Scopes:                  c.Scopes,
		ConsentRequired:         *c.ConsentRequired,
		AllowPlainPKCE:          c.AllowPlainPKCE,
		AccessTokenLifetime:     time.Duration(c.AccessTokenLifetime),
		RefreshTokenLifetime:    time.Duration(c.RefreshTokenLifetime),
		AppIdentifier:           c.AppIdentifier,
		AppPlatform:             c.AppPlatform,
		AppVersion:              c.AppVersion,
	}
	if c.ClientSecret != "" {
		sc.SecretHash = s.secrets.Hash(token.LabelClientSecret, c.ClientSecret)
	}
	return sc, nil
}
