-- A refresh reads its token, grant and person without a lock and writes in
-- one statement that commits itself (sqlstore.GetTokenGrantGuardPerson).
-- That statement calls this guard, which raises LK001 unless the person's
-- row is still the version read (compared by xmin: any update makes a new
-- version), now under a share lock, and the token's and the grant's rows
-- are still the versions read. Each PERFORM of a VOLATILE function takes a
-- new snapshot under READ COMMITTED, so the last two see what committed
-- while the lock was awaited. Without wait, a person's row under a
-- writer's lock counts as changed (SKIP LOCKED): a shared commit never
-- waits on a person's lock, and its caller runs again, locking.
CREATE FUNCTION latchkey_guard_issue(p_id TEXT, p_version TEXT, t_hash BYTEA, t_version TEXT,
    g_id TEXT, g_version TEXT, wait BOOLEAN) RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF wait THEN
        PERFORM 1 FROM persons WHERE id = p_id AND xmin::text = p_version FOR SHARE;
    ELSE
        PERFORM 1 FROM persons WHERE id = p_id AND xmin::text = p_version FOR SHARE SKIP LOCKED;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'latchkey: the person changed after the read' USING ERRCODE = 'LK001';
    END IF;
    PERFORM 1 FROM tokens WHERE hash = t_hash AND xmin::text = t_version;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'latchkey: the token changed after the read' USING ERRCODE = 'LK001';
    END IF;
    PERFORM 1 FROM grants WHERE id = g_id AND xmin::text = g_version;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'latchkey: the grant changed after the read' USING ERRCODE = 'LK001';
    END IF;
    RETURN true;
END;
$$;
