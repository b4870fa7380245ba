-- A revocation of a refresh token without a read before it
-- (sqlstore.RevokeLiveToken) calls this in the statement that also inserts
-- its event: it revokes the client's live refresh token together with its
-- grant and the grant's other tokens, as RevokeGrant does, and returns the
-- grant and the token's subject. It returns no row, and runs no UPDATE,
-- when there is no such token (see 0033: the statement-level triggers of
-- 0027 move the token generation for an UPDATE of no row too), and no row
-- when a concurrent revocation of the grant took the token first: the
-- caller then reads the token to say which case it is.
-- The grant's row is locked before its tokens', in RevokeGrant's order, so
-- that two revocations of one grant's refresh tokens cannot deadlock.
-- With c_gen >= 0 it first checks the generations the request decided on
-- (0032). Subjects outside ASCII are left to the read-first path (0033).
CREATE FUNCTION latchkey_revoke_refresh(t_hash BYTEA, t_client TEXT, t_at BIGINT, c_gen BIGINT, t_gen BIGINT)
    RETURNS TABLE (grant_id TEXT, subject TEXT) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    g TEXT;
    s TEXT;
BEGIN
    IF c_gen >= 0 THEN
        PERFORM latchkey_guard_generations(c_gen, t_gen);
    END IF;
    SELECT t.grant_id, t.subject INTO g, s FROM tokens t WHERE t.hash = t_hash AND t.client_id = t_client
        AND t.kind = 'refresh' AND t.revoked_at = 0 AND octet_length(t.subject) = char_length(t.subject);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE grants SET revoked_at = t_at WHERE id = g AND revoked_at = 0;
    RETURN QUERY WITH r AS (UPDATE tokens SET revoked_at = t_at WHERE tokens.grant_id = g AND revoked_at = 0
            RETURNING tokens.hash)
        SELECT g, s WHERE EXISTS (SELECT 1 FROM r WHERE r.hash = t_hash);
END;
$$;
