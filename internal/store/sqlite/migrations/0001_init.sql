-- latchkey schema, SQLite dialect. Times: Unix microseconds (0 = unset);
-- events.occurred: Unix milliseconds. Lists: JSON text.
CREATE TABLE clients (
    id               TEXT PRIMARY KEY,
    secret_hash      BLOB,
    secret_phc       TEXT NOT NULL DEFAULT '',
    name             TEXT NOT NULL DEFAULT '',
    auth_method      TEXT NOT NULL,
    jwks             BLOB,
    jwks_uri         TEXT NOT NULL DEFAULT '',
    redirect_uris    TEXT NOT NULL DEFAULT '[]',
    grant_types      TEXT NOT NULL DEFAULT '[]',
    scopes           TEXT NOT NULL DEFAULT '[]',
    consent_required INTEGER NOT NULL DEFAULT 1,
    allow_plain_pkce INTEGER NOT NULL DEFAULT 0,
    access_ttl       INTEGER NOT NULL,
    refresh_ttl      INTEGER NOT NULL,
    app_identifier   TEXT NOT NULL DEFAULT '',
    app_platform     TEXT NOT NULL DEFAULT '',
    app_version      TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

CREATE TABLE client_assertion_ids (
    client_id  TEXT NOT NULL,
    jti        TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
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
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE grants (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL,
    subject    TEXT NOT NULL DEFAULT '',
    scopes     TEXT NOT NULL DEFAULT '[]',
    auth_level INTEGER NOT NULL DEFAULT 0,
    amr        TEXT NOT NULL DEFAULT '[]',
    data       BLOB,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX grants_expires ON grants (expires_at);

CREATE TABLE tokens (
    hash        BLOB PRIMARY KEY,
    kind        TEXT NOT NULL,
    grant_id    TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    subject     TEXT NOT NULL DEFAULT '',
    scopes      TEXT NOT NULL DEFAULT '[]',
    issued_at   INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    usage_limit INTEGER NOT NULL DEFAULT 0,
    usage_count INTEGER NOT NULL DEFAULT 0,
    used_at     INTEGER NOT NULL DEFAULT 0,
    revoked_at  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX tokens_grant ON tokens (grant_id);

CREATE TABLE auth_codes (
    hash                  BLOB PRIMARY KEY,
    client_id             TEXT NOT NULL,
    subject               TEXT NOT NULL DEFAULT '',
    redirect_uri          TEXT NOT NULL DEFAULT '',
    scopes                TEXT NOT NULL DEFAULT '[]',
    code_challenge        TEXT NOT NULL DEFAULT '',
    code_challenge_method TEXT NOT NULL DEFAULT '',
    auth_level            INTEGER NOT NULL DEFAULT 0,
    amr                   TEXT NOT NULL DEFAULT '[]',
    data                  BLOB,
    issued_at             INTEGER NOT NULL,
    expires_at            INTEGER NOT NULL,
    used_at               INTEGER NOT NULL DEFAULT 0,
    grant_id              TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX auth_codes_expires ON auth_codes (expires_at);

CREATE TABLE auth_requests (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL,
    data       BLOB,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX auth_requests_expires ON auth_requests (expires_at);

CREATE TABLE sessions (
    hash       BLOB PRIMARY KEY,
    person_id  TEXT NOT NULL,
    auth_level INTEGER NOT NULL DEFAULT 0,
    amr        TEXT NOT NULL DEFAULT '[]',
    auth_time  INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE consents (
    person_id  TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    scope      TEXT NOT NULL,
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (person_id, client_id, scope)
);

CREATE TABLE throttle (
    key          TEXT PRIMARY KEY,
    window_start INTEGER NOT NULL,
    hits         INTEGER NOT NULL
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
    occurred       INTEGER NOT NULL
);
CREATE INDEX events_occurred ON events (kind, occurred DESC, id DESC);
