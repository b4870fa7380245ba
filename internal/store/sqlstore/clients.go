package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const clientColumns = `id, secret_hash, secret_phc, name, auth_method, jwks, jwks_uri, redirect_uris, grant_types,
	scopes, consent_required, allow_plain_pkce, access_ttl, refresh_ttl, app_identifier, app_platform, app_version,
	introspect_any_token, device_approval_clients, post_logout_redirect_uris, access_token_format, registration_hash,
	created_at, updated_at, revision`

// clientArgs are c's values of clientColumns, stamped now, at revision 1.
func clientArgs(c store.Client, now int64) []any {
	return []any{c.ID, c.SecretHash, c.SecretPHC, c.Name, c.TokenEndpointAuthMethod, c.JWKS, c.JWKSURI,
		list(c.RedirectURIs), list(c.GrantTypes), list(c.Scopes), c.ConsentRequired, c.AllowPlainPKCE,
		int64(c.AccessTokenLifetime), int64(c.RefreshTokenLifetime), c.AppIdentifier, c.AppPlatform, c.AppVersion,
		c.IntrospectAnyToken, list(c.DeviceApprovalClients), list(c.PostLogoutRedirectURIs), c.AccessTokenFormat,
		c.RegistrationHash, now, now, 1}
}

const insertClient = `INSERT INTO clients (` + clientColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// bumpClientGeneration runs in the transaction of every client write.
func (db *DB) bumpClientGeneration(ctx context.Context) error {
	_, err := db.exec(ctx, `UPDATE client_generation SET generation = generation + 1 WHERE id = 1`)
	return err
}

// clientTx runs fn in a transaction that bumps the client generation.
func (db *DB) clientTx(ctx context.Context, fn func(tx *DB) error) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		if err := fn(tx); err != nil {
			return err
		}
		return tx.bumpClientGeneration(ctx)
	})
}

// UpsertClient creates or replaces a client, keeping its CreatedAt.
func (db *DB) UpsertClient(ctx context.Context, c store.Client) error {
	return db.clientTx(ctx, func(tx *DB) error {
		_, err := tx.exec(ctx, insertClient+`
		ON CONFLICT (id) DO UPDATE SET secret_hash = excluded.secret_hash, secret_phc = excluded.secret_phc,
			name = excluded.name, auth_method = excluded.auth_method, jwks = excluded.jwks, jwks_uri = excluded.jwks_uri,
			redirect_uris = excluded.redirect_uris, grant_types = excluded.grant_types, scopes = excluded.scopes,
			consent_required = excluded.consent_required, allow_plain_pkce = excluded.allow_plain_pkce,
			access_ttl = excluded.access_ttl, refresh_ttl = excluded.refresh_ttl, app_identifier = excluded.app_identifier,
			app_platform = excluded.app_platform, app_version = excluded.app_version,
			introspect_any_token = excluded.introspect_any_token, device_approval_clients = excluded.device_approval_clients,
			post_logout_redirect_uris = excluded.post_logout_redirect_uris, access_token_format = excluded.access_token_format,
			registration_hash = excluded.registration_hash, updated_at = excluded.updated_at,
			revision = clients.revision + 1`, clientArgs(c, micros(time.Now()))...)
		return err
	})
}

// CreateClient inserts a new client.
func (db *DB) CreateClient(ctx context.Context, c store.Client) error {
	return db.clientTx(ctx, func(tx *DB) error {
		_, err := tx.exec(ctx, insertClient, clientArgs(c, micros(time.Now()))...)
		return err
	})
}

// UpdateClient is a read-modify-write of one client under its row lock.
func (db *DB) UpdateClient(ctx context.Context, id string, fn func(store.Client) (store.Client, error)) (store.Client, error) {
	var out store.Client
	err := db.clientTx(ctx, func(tx *DB) error {
		old, err := scanClient(tx.queryRowWrite(ctx, `SELECT `+clientColumns+` FROM clients WHERE id = ?`+tx.d.ForNoKeyUpdate, id))
		if err = tx.scanErr(err); err != nil {
			return err
		}
		c, err := fn(old)
		if err != nil {
			return err
		}
		c.ID, c.CreatedAt, c.UpdatedAt, c.Revision = old.ID, old.CreatedAt, time.Now().UTC().Truncate(time.Microsecond), old.Revision+1
		_, err = tx.exec(ctx, `UPDATE clients SET secret_hash = ?, secret_phc = ?, name = ?, auth_method = ?, jwks = ?,
			jwks_uri = ?, redirect_uris = ?, grant_types = ?, scopes = ?, consent_required = ?, allow_plain_pkce = ?,
			access_ttl = ?, refresh_ttl = ?, app_identifier = ?, app_platform = ?, app_version = ?,
			introspect_any_token = ?, device_approval_clients = ?, post_logout_redirect_uris = ?,
			access_token_format = ?, registration_hash = ?, updated_at = ?, revision = ? WHERE id = ?`,
			c.SecretHash, c.SecretPHC, c.Name, c.TokenEndpointAuthMethod, c.JWKS, c.JWKSURI,
			list(c.RedirectURIs), list(c.GrantTypes), list(c.Scopes), c.ConsentRequired, c.AllowPlainPKCE,
			int64(c.AccessTokenLifetime), int64(c.RefreshTokenLifetime), c.AppIdentifier, c.AppPlatform, c.AppVersion,
			c.IntrospectAnyToken, list(c.DeviceApprovalClients), list(c.PostLogoutRedirectURIs), c.AccessTokenFormat,
			c.RegistrationHash, micros(c.UpdatedAt), c.Revision, id)
		out = c
		return err
	})
	return out, err
}

type scanner interface{ Scan(...any) error }

func scanClient(s scanner) (store.Client, error) {
	var c store.Client
	var redirects, grants, scopes, approvals, logouts string
	var access, refresh, created, updated int64
	if err := s.Scan(&c.ID, &c.SecretHash, &c.SecretPHC, &c.Name, &c.TokenEndpointAuthMethod, &c.JWKS, &c.JWKSURI,
		&redirects, &grants, &scopes, &c.ConsentRequired, &c.AllowPlainPKCE, &access, &refresh,
		&c.AppIdentifier, &c.AppPlatform, &c.AppVersion, &c.IntrospectAnyToken, &approvals, &logouts, &c.AccessTokenFormat,
		&c.RegistrationHash, &created, &updated, &c.Revision); err != nil {
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
	c.SecretHash, c.JWKS, c.RegistrationHash = fromBlob(c.SecretHash), fromBlob(c.JWKS), fromBlob(c.RegistrationHash)
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

// DeleteClient removes a client and revokes what it holds. The DELETE
// comes first: it waits for the issuances holding the row (KeyShare), so
// the revoking statements after it see their grants.
func (db *DB) DeleteClient(ctx context.Context, id string, now time.Time) (store.ClientRevocation, error) {
	var out store.ClientRevocation
	err := db.clientTx(ctx, func(tx *DB) error {
		out = store.ClientRevocation{}
		if err := tx.execOne(ctx, `DELETE FROM clients WHERE id = ?`, id); err != nil {
			return err
		}
		ids, err := tx.revokeGrants(ctx, `UPDATE grants SET revoked_at = ? WHERE client_id = ? AND revoked_at = 0 RETURNING id`,
			micros(now), id)
		if err != nil {
			return err
		}
		out.Grants = int64(len(ids))
		res, err := tx.exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE revoked_at = 0 AND grant_id IN
			(SELECT id FROM grants WHERE client_id = ?)`, micros(now), id)
		if err != nil {
			return err
		}
		if out.Tokens, err = affected(res); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `DELETE FROM consents WHERE client_id = ?`, id)
		return err
	})
	return out, err
}

// ClientGeneration reads the client generation: a number that every
// committed client write, of any instance, has changed, so a client read
// after it returned g is at least as new as every write that committed
// before. The caches follow it; it is not part of store.Store.
func (db *DB) ClientGeneration(ctx context.Context) (int64, error) {
	var g int64
	err := db.queryRow(ctx, `SELECT generation FROM client_generation WHERE id = 1`).Scan(&g)
	return g, db.scanErr(err)
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
