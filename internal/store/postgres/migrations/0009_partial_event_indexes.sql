-- Many events have no user (machine-to-machine tokens and their
-- introspection), no transaction or no agent: their indexes leave those
-- events out, which saves each such insert a b-tree. Searches that filter
-- on one of these columns name the index's condition (eventWhere).
DROP INDEX events_user;
CREATE INDEX events_user ON events (kind, user_id_lower, occurred DESC, id DESC) WHERE user_id_lower <> '';
DROP INDEX events_transaction;
CREATE INDEX events_transaction ON events (kind, transaction_id, occurred DESC, id DESC) WHERE transaction_id <> '';
DROP INDEX events_agent;
CREATE INDEX events_agent ON events (kind, agent_user, occurred DESC, id DESC) WHERE agent_user <> '';
