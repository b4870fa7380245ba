-- latchkey schema, PostgreSQL dialect. Times: Unix microseconds (0 = unset);
-- events.occurred: Unix milliseconds. Lists: JSON text.
CREATE TABLE clients (
    id               TEXT PRIMARY KEY,
    secret_hash      BYTEA,
    secret_phc       TEXT NOT NULL DEFAULT '',
    name             TEXT NOT NULL DEFAULT '',
    auth_method      TEXT NOT NULL,
    jwks             BYTEA,
    jwks_uri         TEXT NOT NULL DEFAULT '',
    redirect_uris    TEXT NOT NULL DEFAULT '[]',
    grant_types      TEXT NOT NULL DEFAULT '[]',
    scopes           TEXT NOT NULL DEFAULT '[]',
    consent_required BOOLEAN NOT NULL DEFAULT TRUE,
    allow_plain_pkce BOOLEAN NOT NULL DEFAULT FALSE,
    access_ttl       BIGINT NOT NULL,
    refresh_ttl      BIGINT NOT NULL,
    app_identifier   TEXT NOT NULL DEFAULT '',
    app_platform     TEXT NOT NULL DEFAULT '',
    app_version      TEXT NOT NULL DEFAULT '',
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);

CREATE TABLE client_assertion_ids (
    client_id  TEXT NOT NULL,
    jti        TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (client_id, jti)
);

CREATE TABLE persons (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL,
    email_lower   TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL DEFAULT '',
    first_name    TEXT NOT NULL DEFAULT '',
    last_name     TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);

CREATE TABLE grants (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL,
    subject    TEXT NOT NULL DEFAULT '',
    scopes     TEXT NOT NULL DEFAULT '[]',
    auth_level BIGINT NOT NULL DEFAULT 0,
    amr        TEXT NOT NULL DEFAULT '[]',
    data       BYTEA,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX grants_expires ON grants (expires_at);

CREATE TABLE tokens (
    hash        BYTEA PRIMARY KEY,
    kind        TEXT NOT NULL,
    grant_id    TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    subject     TEXT NOT NULL DEFAULT '',
    scopes      TEXT NOT NULL DEFAULT '[]',
    issued_at   BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    usage_limit BIGINT NOT NULL DEFAULT 0,
    usage_count BIGINT NOT NULL DEFAULT 0,
    used_at     BIGINT NOT NULL DEFAULT 0,
    revoked_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX tokens_grant ON tokens (grant_id);

CREATE TABLE auth_codes (
    hash                  BYTEA PRIMARY KEY,
    client_id             TEXT NOT NULL,
    subject               TEXT NOT NULL DEFAULT '',
    redirect_uri          TEXT NOT NULL DEFAULT '',
    scopes                TEXT NOT NULL DEFAULT '[]',
    code_challenge        TEXT NOT NULL DEFAULT '',
    code_challenge_method TEXT NOT NULL DEFAULT '',
    auth_level            BIGINT NOT NULL DEFAULT 0,
    amr                   TEXT NOT NULL DEFAULT '[]',
    data                  BYTEA,
    issued_at             BIGINT NOT NULL,
    expires_at            BIGINT NOT NULL,
    used_at               BIGINT NOT NULL DEFAULT 0,
    grant_id              TEXT NOT NULL DEFAULT ''
);
CREATE INDEX auth_codes_expires ON auth_codes (expires_at);

CREATE TABLE auth_requests (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL,
    data       BYTEA,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX auth_requests_expires ON auth_requests (expires_at);

CREATE TABLE sessions (
    hash       BYTEA PRIMARY KEY,
    person_id  TEXT NOT NULL,
    auth_level BIGINT NOT NULL DEFAULT 0,
    amr        TEXT NOT NULL DEFAULT '[]',
    auth_time  BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE consents (
    person_id  TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    scope      TEXT NOT NULL,
    granted_at BIGINT NOT NULL,
    PRIMARY KEY (person_id, client_id, scope)
);

CREATE TABLE throttle (
    key          TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    hits         BIGINT NOT NULL
);

CREATE TABLE events (
    id             TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    type           TEXT NOT NULL,
    name           TEXT NOT NULL,
    client_id      TEXT NOT NULL DEFAULT '',
    app_name       TEXT NOT NULL DEFAULT '',
    transaction_id TEXT NOT NULL DEFAULT '',
    user_id        TEXT NOT NULL DEFAULT '',
    user_id_lower  TEXT NOT NULL DEFAULT '',
    person_id      TEXT NOT NULL DEFAULT '',
    client_ip      TEXT NOT NULL DEFAULT '',
    user_agent     TEXT NOT NULL DEFAULT '',
    agent_user     TEXT NOT NULL DEFAULT '',
    occurred       BIGINT NOT NULL
);
CREATE INDEX events_occurred ON events (kind, occurred DESC, id DESC);
