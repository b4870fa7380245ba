-- Counts every deletion from events, so that a count of a kind's events
-- that reached a search's cap can be remembered until the next deletion
-- (sqlstore's CountEvents): inserts only raise a count. The triggers make
-- every deletion count, whichever code or operator runs it; once per
-- statement, so a retention sweep's batch bumps it once.
CREATE TABLE event_deletions (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL
);
INSERT INTO event_deletions (id, generation) VALUES (1, 0);
CREATE FUNCTION bump_event_deletions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE event_deletions SET generation = generation + 1 WHERE id = 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER events_deleted AFTER DELETE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION bump_event_deletions();
CREATE TRIGGER events_truncated AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION bump_event_deletions();
