-- PostgreSQL's 0027 adds the token generation that its instances' token
-- caches follow. SQLite's file has one process, whose writes invalidate
-- its token cache directly (sqlstore.TokenCache): nothing to add.
SELECT 1;
