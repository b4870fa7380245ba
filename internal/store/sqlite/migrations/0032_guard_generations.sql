-- PostgreSQL's 0032 adds the guard of a request that decided on the
-- generations last read. SQLite has no generations: nothing to add.
SELECT 1;
