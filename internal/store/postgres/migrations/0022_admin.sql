-- The admin API (issue 21, docs/ADMIN.md).
-- revision counts the writes of a client: the API's ETag, so that an update
-- sent with If-Match of an older revision is refused instead of lost.
ALTER TABLE clients ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;
-- One number that every client write bumps in its own transaction: an
-- instance compares it with the one its cached clients were read under, so
-- a change on another instance takes effect at once (internal/client/cache.go).
CREATE TABLE client_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL
);
INSERT INTO client_generation (id, generation) VALUES (1, 1);
-- Deleting a client revokes its grants in the deleting transaction. IF NOT
-- EXISTS: on a large PostgreSQL the operator may build it CONCURRENTLY first.
CREATE INDEX IF NOT EXISTS grants_client ON grants (client_id);
-- GET /api/v1/persons?email= looks in every partition.
CREATE INDEX IF NOT EXISTS persons_email ON persons (email_lower);
-- Erasing a person deletes their mails (sent ones are kept a week, with
-- the recipient's address).
CREATE INDEX IF NOT EXISTS outbox_person ON outbox (person_id) WHERE person_id <> '';
