-- The mail outbox (issue 25): every mail is written here in the transaction
-- of the change that causes it, and sent behind by whichever instance claims
-- it (a lease: lease_owner until lease_until). Bodies are sealed with the
-- server key; sent mails keep only their metadata (bodies are emptied).
CREATE TABLE outbox (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  person_id TEXT NOT NULL DEFAULT '',
  recipient TEXT NOT NULL,
  body BYTEA NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until BIGINT NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  sent_at BIGINT NOT NULL DEFAULT 0
);
-- The claim reads the due, unsent mails in order.
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE sent_at = 0;
