CREATE TABLE scopes (
    id                           TEXT PRIMARY KEY,
    authentication_level         BIGINT NOT NULL DEFAULT 0,
    usage_limit                  BIGINT NOT NULL DEFAULT 0,
    service_endpoint             TEXT NOT NULL DEFAULT '',
    verification_failed_endpoint TEXT NOT NULL DEFAULT '',
    persistent_consent           BOOLEAN NOT NULL DEFAULT FALSE,
    descriptions                 TEXT NOT NULL DEFAULT '{}',
    created_at                   BIGINT NOT NULL,
    updated_at                   BIGINT NOT NULL
);
