-- Counts every deletion from events, so that a count of a kind's events
-- that reached a search's cap can be remembered until the next deletion
-- (sqlstore's CountEvents): inserts only raise a count. The trigger makes
-- every deletion count, whichever code or operator runs it.
CREATE TABLE event_deletions (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO event_deletions (id, generation) VALUES (1, 0);
CREATE TRIGGER events_deleted AFTER DELETE ON events
BEGIN
    UPDATE event_deletions SET generation = generation + 1 WHERE id = 1;
END;
