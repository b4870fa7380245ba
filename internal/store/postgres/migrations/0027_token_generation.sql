-- The token generation: every statement that can change what a stored
-- access token answers (its revocation, its grant's revocation or data, a
-- deletion) bumps it, by triggers, whichever instance or operator runs it.
-- Each instance's token cache tags its entries with the generation read
-- before the row, and reads a row again once the generation has moved
-- (sqlstore.TokenCache). Sixteen shards, picked by backend, so that
-- concurrent revocations seldom wait for each other's commit on one row;
-- the generation is their sum (each shard only grows).
CREATE TABLE token_generation (
    shard      INTEGER PRIMARY KEY,
    generation BIGINT NOT NULL
);
INSERT INTO token_generation (shard, generation) SELECT s, 0 FROM generate_series(0, 15) AS s;
CREATE FUNCTION bump_token_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE token_generation SET generation = generation + 1 WHERE shard = pg_backend_pid() % 16;
    RETURN NULL;
END;
$$;
CREATE TRIGGER tokens_changed AFTER UPDATE OF revoked_at OR DELETE ON tokens
    FOR EACH STATEMENT EXECUTE FUNCTION bump_token_generation();
CREATE TRIGGER tokens_truncated AFTER TRUNCATE ON tokens
    FOR EACH STATEMENT EXECUTE FUNCTION bump_token_generation();
CREATE TRIGGER grants_changed AFTER UPDATE OF revoked_at, data OR DELETE ON grants
    FOR EACH STATEMENT EXECUTE FUNCTION bump_token_generation();
CREATE TRIGGER grants_truncated AFTER TRUNCATE ON grants
    FOR EACH STATEMENT EXECUTE FUNCTION bump_token_generation();
