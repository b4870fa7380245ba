CREATE TABLE device_codes (
    hash           BYTEA PRIMARY KEY,
    user_code      TEXT NOT NULL UNIQUE,
    client_id      TEXT NOT NULL,
    scopes         TEXT NOT NULL DEFAULT '[]',
    idp            TEXT NOT NULL DEFAULT '',
    poll_interval  BIGINT NOT NULL,
    last_polled_at BIGINT NOT NULL DEFAULT 0,
    status         TEXT NOT NULL,
    subject        TEXT NOT NULL DEFAULT '',
    auth_level     BIGINT NOT NULL DEFAULT 0,
    amr            TEXT NOT NULL DEFAULT '[]',
    approved_by    TEXT NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL
);
CREATE INDEX device_codes_expires ON device_codes (expires_at);
