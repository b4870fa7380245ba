CREATE TABLE device_codes (
    hash           BLOB PRIMARY KEY,
    user_code      TEXT NOT NULL UNIQUE,
    client_id      TEXT NOT NULL,
    scopes         TEXT NOT NULL DEFAULT '[]',
    idp            TEXT NOT NULL DEFAULT '',
    poll_interval  INTEGER NOT NULL,
    last_polled_at INTEGER NOT NULL DEFAULT 0,
    status         TEXT NOT NULL,
    subject        TEXT NOT NULL DEFAULT '',
    auth_level     INTEGER NOT NULL DEFAULT 0,
    amr            TEXT NOT NULL DEFAULT '[]',
    approved_by    TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL
);
CREATE INDEX device_codes_expires ON device_codes (expires_at);
