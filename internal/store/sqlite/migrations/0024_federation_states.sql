-- The round trips to upstream identity providers (the federation issue,
-- docs/FEDERATION.md): single-use, expiring states stored under the keyed
-- hash of the value sent upstream, bound to the browser by the keyed hash
-- of a cookie.
CREATE TABLE federation_states (
  hash       BLOB PRIMARY KEY,
  kind       TEXT NOT NULL,
  request_id TEXT NOT NULL DEFAULT '',
  method_id  TEXT NOT NULL,
  browser    BLOB NOT NULL,
  target     TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX federation_states_expires ON federation_states (expires_at);
