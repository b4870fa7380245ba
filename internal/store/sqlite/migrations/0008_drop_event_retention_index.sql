-- Retention finds old events through events_occurred (kind, occurred), one
-- range per kind, so the separate (occurred) index only cost every event
-- insert one more b-tree (and its page in each commit).
DROP INDEX events_retention;
