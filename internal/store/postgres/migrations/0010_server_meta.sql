-- Facts about the deployment itself, one row per name. The first is
-- 'server_key_fingerprint': a one-way fingerprint of the server key whose
-- keyed hashes and sealed values the database holds, so that an instance
-- started with another key refuses to start instead of failing every
-- client authentication (see ClaimServerKey).
CREATE TABLE server_meta (
    name  TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);
