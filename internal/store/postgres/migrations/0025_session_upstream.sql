-- A session signed in at an upstream identity provider remembers the login
-- method and the upstream's ID token (sealed), so a logout can end the
-- upstream session too. Expand only: the previous release never reads them.
ALTER TABLE sessions ADD COLUMN idp_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN upstream_id_token BYTEA;
