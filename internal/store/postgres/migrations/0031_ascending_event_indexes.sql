-- Event searches read the latest first, and the search indexes kept their
-- keys in that order: (kind, column, occurred DESC, id DESC). Events are
-- inserted in time order, so each new key went to the front of its
-- (kind, column) range: no insert took the b-tree's path for appends at
-- its right end, and each page split left a half-empty page behind. In
-- ascending order the latest range's new keys go to the right end. A
-- search's ORDER BY occurred DESC, id DESC reads the same index backwards.
--
-- An index already ascending is kept: on a large table an operator may
-- build each one beforehand with CREATE INDEX CONCURRENTLY under another
-- name, drop the old one concurrently and rename the new one
-- (docs/PERFORMANCE.md), so that this migration rebuilds nothing while
-- other instances write events.
DO $$
DECLARE
    ix RECORD;
BEGIN
    FOR ix IN SELECT * FROM (VALUES
        ('events_occurred', '(kind, occurred, id)', ''),
        ('events_user', '(kind, user_id_lower, occurred, id)', ' WHERE user_id_lower <> '''''),
        ('events_client', '(kind, client_id, occurred, id)', ''),
        ('events_type', '(kind, type, occurred, id)', ''),
        ('events_transaction', '(kind, transaction_id, occurred, id)', ' WHERE transaction_id <> '''''),
        ('events_agent', '(kind, agent_user, occurred, id)', ' WHERE agent_user <> ''''')
    ) AS t(name, cols, cond) LOOP
        IF to_regclass(ix.name) IS NULL OR pg_get_indexdef(to_regclass(ix.name)) LIKE '%DESC%' THEN
            EXECUTE format('DROP INDEX IF EXISTS %I', ix.name);
            EXECUTE format('CREATE INDEX %I ON events %s%s', ix.name, ix.cols, ix.cond);
        END IF;
    END LOOP;
END
$$;
