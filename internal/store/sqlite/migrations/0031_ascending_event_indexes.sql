-- Event searches read the latest first, and the search indexes kept their
-- keys in that order: (kind, column, occurred DESC, id DESC). Events are
-- inserted in time order, so each new key went to the front of its
-- (kind, column) range, where no append path applies: every insert
-- descended the b-tree, and each page split left a half-empty page behind.
-- In ascending order a new key goes to the end of its range. A search's
-- ORDER BY occurred DESC, id DESC reads the same index backwards.
DROP INDEX events_occurred;
CREATE INDEX events_occurred ON events (kind, occurred, id);
DROP INDEX events_user;
CREATE INDEX events_user ON events (kind, user_id_lower, occurred, id) WHERE user_id_lower <> '';
DROP INDEX events_client;
CREATE INDEX events_client ON events (kind, client_id, occurred, id);
DROP INDEX events_type;
CREATE INDEX events_type ON events (kind, type, occurred, id);
DROP INDEX events_transaction;
CREATE INDEX events_transaction ON events (kind, transaction_id, occurred, id) WHERE transaction_id <> '';
DROP INDEX events_agent;
CREATE INDEX events_agent ON events (kind, agent_user, occurred, id) WHERE agent_user <> '';
