-- Single-use, expiring tokens a person receives by mail (activation,
-- invitation, password reset, email one-time codes), stored only as keyed
-- hashes. used_at is 0 until the token is used.
CREATE TABLE person_tokens (
  hash BYTEA PRIMARY KEY,
  kind TEXT NOT NULL,
  person_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX person_tokens_person ON person_tokens (person_id, kind);
CREATE INDEX person_tokens_expires ON person_tokens (expires_at);
