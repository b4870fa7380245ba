-- PostgreSQL's 0033 adds the revocation of an access token in the
-- statement of its event. SQLite runs it as a transaction of two
-- statements: nothing to add.
SELECT 1;
