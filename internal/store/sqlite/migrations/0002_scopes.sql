CREATE TABLE scopes (
    id                           TEXT PRIMARY KEY,
    authentication_level         INTEGER NOT NULL DEFAULT 0,
    usage_limit                  INTEGER NOT NULL DEFAULT 0,
    service_endpoint             TEXT NOT NULL DEFAULT '',
    verification_failed_endpoint TEXT NOT NULL DEFAULT '',
    persistent_consent           INTEGER NOT NULL DEFAULT 0,
    descriptions                 TEXT NOT NULL DEFAULT '{}',
    created_at                   INTEGER NOT NULL,
    updated_at                   INTEGER NOT NULL
);
