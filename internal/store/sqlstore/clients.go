package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const clientColumns = `id, secret_hash, secret_phc, name, auth_method, jwks, jwks_uri, redirect_uris, grant_types,
	scopes, consent_required, allow_plain_pkce, access_ttl, refresh_ttl, app_identifier, app_platform, app_version,
	introspect_any_token, device_approval_clients, post_logout_redirect_uris, access_token_format, created_at, updated_at`

// UpsertClient creates or replaces a client, keeping its CreatedAt.
func (db *DB) UpsertClient(ctx context.Context, c store.Client) error {
	now := micros(time.Now())
	_, err := db.exec(ctx, `INSERT INTO clients (`+clientColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET secret_hash = excluded.secret_hash, secret_phc = excluded.secret_phc,
			name = excluded.name, auth_method = excluded.auth_method, jwks = excluded.jwks, jwks_uri = excluded.jwks_uri,
			redirect_uris = excluded.redirect_uris, grant_types = excluded.grant_types, scopes = excluded.scopes,
			consent_required = excluded.consent_required, allow_plain_pkce = excluded.allow_plain_pkce,
			access_ttl = excluded.access_ttl, refresh_ttl = excluded.refresh_ttl, app_identifier = excluded.app_identifier,
			app_platform = excluded.app_platform, app_version = excluded.app_version,
			introspect_any_token = excluded.introspect_any_token, device_approval_clients = excluded.device_approval_clients,
			post_logout_redirect_uris = excluded.post_logout_redirect_uris, access_token_format = excluded.access_token_format,
			updated_at = excluded.updated_at`,
		c.ID, c.SecretHash, c.SecretPHC, c.Name, c.TokenEndpointAuthMethod, c.JWKS, c.JWKSURI,
		list(c.RedirectURIs), list(c.GrantTypes), list(c.Scopes), c.ConsentRequired, c.AllowPlainPKCE,
		int64(c.AccessTokenLifetime), int64(c.RefreshTokenLifetime), c.AppIdentifier, c.AppPlatform, c.AppVersion,
		c.IntrospectAnyToken, list(c.DeviceApprovalClients), list(c.PostLogoutRedirectURIs), c.AccessTokenFormat, now, now)
	return err
}

type scanner interface{ Scan(...any) error }

func scanClient(s scanner) (store.Client, error) {
	var c store.Client
	var redirects, grants, scopes, approvals, logouts string
	var access, refresh, created, updated int64
	if err := s.Scan(&c.ID, &c.SecretHash, &c.SecretPHC, &c.Name, &c.TokenEndpointAuthMethod, &c.JWKS, &c.JWKSURI,
		&redirects, &grants, &scopes, &c.ConsentRequired, &c.AllowPlainPKCE, &access, &refresh,
		&c.AppIdentifier, &c.AppPlatform, &c.AppVersion, &c.IntrospectAnyToken, &approvals, &logouts, &c.AccessTokenFormat, &created, &updated); err != nil {
		return c, err
	}
	var err error
	if c.RedirectURIs, err = fromList(redirects); err != nil {
		return c, err
	}
	if c.GrantTypes, err = fromList(grants); err != nil {
		return c, err
	}
	if c.Scopes, err = fromList(scopes); err != nil {
		return c, err
	}
	if c.DeviceApprovalClients, err = fromList(approvals); err != nil {
		return c, err
	}
	if c.PostLogoutRedirectURIs, err = fromList(logouts); err != nil {
		return c, err
	}
	c.SecretHash, c.JWKS = fromBlob(c.SecretHash), fromBlob(c.JWKS)
	c.AccessTokenLifetime, c.RefreshTokenLifetime = time.Duration(access), time.Duration(refresh)
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

// GetClient returns one client.
func (db *DB) GetClient(ctx context.Context, id string) (store.Client, error) {
	c, err := scanClient(db.queryRow(ctx, `SELECT `+clientColumns+` FROM clients WHERE id = ?`, id))
	return c, db.scanErr(err)
}

// ListClients returns every client by ID.
func (db *DB) ListClients(ctx context.Context) ([]store.Client, error) {
	rows, err := db.query(ctx, `SELECT `+clientColumns+` FROM clients ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Client
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, db.d.Translate(rows.Err())
}

// DeleteClient removes a client.
func (db *DB) DeleteClient(ctx context.Context, id string) error {
	return db.execOne(ctx, `DELETE FROM clients WHERE id = ?`, id)
}

// UseAssertionID records a client assertion's jti; a live duplicate is a replay.
func (db *DB) UseAssertionID(ctx context.Context, clientID, jti string, expiresAt, now time.Time) error {
	res, err := db.exec(ctx, `INSERT INTO client_assertion_ids (client_id, jti, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (client_id, jti) DO UPDATE SET expires_at = excluded.expires_at
		WHERE client_assertion_ids.expires_at <= ?`, clientID, jti, micros(expiresAt), micros(now))
	if err != nil {
		return err
	}
	n, err := affected(res)
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrConflict
	}
	return nil
}
