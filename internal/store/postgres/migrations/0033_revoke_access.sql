-- A revocation of an access token without a read before it
-- (sqlstore.RevokeAccessToken) calls this in the statement that also
-- inserts its event: it revokes the client's live access token and returns
-- the token's grant and subject. When there is no such token it runs no
-- UPDATE at all: the tokens' statement-level trigger (0027) would move the
-- token generation even for an UPDATE of no row, and every instance's token
-- cache and every request that decided on the generation would pay for it.
-- With c_gen >= 0 it first checks the generations the request decided on
-- (0032), before its own UPDATE moves the token generation.
-- Subjects outside ASCII are left to the read-first path: the caller writes
-- the event's user_id_lower with lower() under the "C" collation, which
-- agrees with Go's lower case for ASCII only.
CREATE FUNCTION latchkey_revoke_access(t_hash BYTEA, t_client TEXT, t_at BIGINT, c_gen BIGINT, t_gen BIGINT)
    RETURNS TABLE (grant_id TEXT, subject TEXT) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    IF c_gen >= 0 THEN
        PERFORM latchkey_guard_generations(c_gen, t_gen);
    END IF;
    IF EXISTS (SELECT 1 FROM tokens WHERE hash = t_hash AND client_id = t_client AND kind = 'access'
            AND revoked_at = 0 AND octet_length(tokens.subject) = char_length(tokens.subject)) THEN
        RETURN QUERY UPDATE tokens SET revoked_at = t_at WHERE hash = t_hash AND client_id = t_client
            AND kind = 'access' AND revoked_at = 0 AND octet_length(tokens.subject) = char_length(tokens.subject)
            RETURNING tokens.grant_id, tokens.subject;
    END IF;
END;
$$;
