-- The guard of a code exchange's self-committing write (sqlstore's
-- UseAuthCodeGuardPerson). The statement's first part used the code:
-- burned is the rows it updated, 1 only if no other exchange used the code
-- after the read. The code's person, when it has one (p_id not NULL), is
-- still the version read, now under a share lock that the statement's
-- commit releases. wait = false (a statement sharing a commit): a person
-- under another transaction's lock counts as changed, and the function
-- runs again in a transaction of its own, where the guard waits.
CREATE FUNCTION latchkey_guard_code(burned BIGINT, p_id TEXT, p_version TEXT, wait BOOLEAN)
    RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF burned IS DISTINCT FROM 1 THEN
        RAISE EXCEPTION 'latchkey: the code was used after the read' USING ERRCODE = 'LK001';
    END IF;
    IF p_id IS NULL THEN
        RETURN true;
    END IF;
    IF wait THEN
        PERFORM 1 FROM persons WHERE id = p_id AND xmin::text = p_version FOR SHARE;
    ELSE
        PERFORM 1 FROM persons WHERE id = p_id AND xmin::text = p_version FOR SHARE SKIP LOCKED;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'latchkey: the person changed after the read' USING ERRCODE = 'LK001';
    END IF;
    RETURN true;
END;
$$;
