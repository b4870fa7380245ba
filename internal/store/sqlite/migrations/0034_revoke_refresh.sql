-- PostgreSQL's 0034 adds the revocation of a refresh token, with its
-- grant, in the statement of its event. SQLite runs it as a transaction of
-- the group commit: nothing to add.
SELECT 1;
