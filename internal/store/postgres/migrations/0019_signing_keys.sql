-- Signing keys of the OpenID Connect provider (ID tokens, JWT access
-- tokens), shared by every instance (internal/signing). generation numbers
-- the rotations: a rotation inserts the next one, and its uniqueness is
-- what lets two instances that rotate at once add one key between them.
-- A key is in the JWKS from publish_at, signs from sign_from, stops
-- signing at retire_at (its successor's sign_from; 0 while it is the
-- newest) and leaves the JWKS at expire_at, when everything it signed has
-- expired; DeleteExpired removes it then. The private key is sealed with
-- the server key (internal/seal, purpose "signing-keys", kid as associated
-- data); public_jwk is its public JWK as JSON.
CREATE TABLE signing_keys (
    kid            TEXT PRIMARY KEY,
    generation     BIGINT NOT NULL UNIQUE,
    alg            TEXT NOT NULL,
    sealed_private BYTEA NOT NULL,
    public_jwk     TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    publish_at     BIGINT NOT NULL,
    sign_from      BIGINT NOT NULL,
    retire_at      BIGINT NOT NULL DEFAULT 0,
    expire_at      BIGINT NOT NULL DEFAULT 0
);
