-- Every filter of the event searches is served by an index that also
-- yields the order (occurred DESC, id DESC), so a page never sorts or scans
-- the whole table.
CREATE INDEX events_user ON events (kind, user_id_lower, occurred DESC, id DESC);
CREATE INDEX events_client ON events (kind, client_id, occurred DESC, id DESC);
CREATE INDEX events_type ON events (kind, type, occurred DESC, id DESC);
CREATE INDEX events_transaction ON events (kind, transaction_id, occurred DESC, id DESC);
CREATE INDEX events_agent ON events (kind, agent_user, occurred DESC, id DESC);
CREATE INDEX events_retention ON events (occurred);
