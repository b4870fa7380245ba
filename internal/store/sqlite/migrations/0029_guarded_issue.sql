-- PostgreSQL's 0029 adds the guard of a refresh's self-committing write.
-- SQLite runs every write transaction alone: nothing to add.
SELECT 1;
