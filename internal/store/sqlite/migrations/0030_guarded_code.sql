-- PostgreSQL's 0030 adds the guard of a code exchange's self-committing
-- write. SQLite runs every write transaction alone: nothing to add.
SELECT 1;
