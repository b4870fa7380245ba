-- A request that decided on the client and token generations last read,
-- without reading them (client.Optimistic), ends its transaction's first
-- statement with this guard: it raises LK002 unless both are still those
-- values, and the transaction then writes nothing (store.ErrStale; the
-- request runs again, reading them). The generations only grow, so equal
-- values mean nothing they cover changed between the two reads.
CREATE FUNCTION latchkey_guard_generations(c BIGINT, t BIGINT) RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF (SELECT generation FROM client_generation WHERE id = 1) IS DISTINCT FROM c
        OR (SELECT COALESCE(SUM(generation), 0) FROM token_generation) IS DISTINCT FROM t THEN
        RAISE EXCEPTION 'latchkey: the generations moved after the request decided' USING ERRCODE = 'LK002';
    END IF;
    RETURN true;
END;
$$;
