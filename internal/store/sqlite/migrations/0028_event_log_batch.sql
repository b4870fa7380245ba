-- The number of the last group-commit batch whose events were written
-- ahead to the event log and whose transaction committed: a replay of the
-- log keeps a batch's events exactly when its number is at most this
-- (sqlite/eventlog.go). One row, updated by each such batch.
CREATE TABLE event_log_batch (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    batch INTEGER NOT NULL
);
INSERT INTO event_log_batch (id, batch) VALUES (1, 0);
