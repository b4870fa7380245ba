-- SQLite's 0028 adds the table that its event log's write-ahead batches
-- are recorded in. PostgreSQL inserts a transaction's events in the
-- transaction itself: nothing to add.
SELECT 1;
