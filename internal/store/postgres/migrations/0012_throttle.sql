-- Throttle windows start at a key's first attempt (store.Throttle.Take) and
-- end at expires_at, which also lets DeleteExpired drop finished windows:
-- keys per address and per unknown client id would otherwise pile up.
ALTER TABLE throttle ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX throttle_expires ON throttle (expires_at);
