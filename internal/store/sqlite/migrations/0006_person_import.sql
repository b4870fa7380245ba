-- Person accounts of the import API: a partition (emails are unique within
-- one), the full profile as JSON, a sealed TOTP secret, and linked external
-- identities. Events carry the partition and the flow context.
CREATE TABLE persons_new (
    id                TEXT PRIMARY KEY,
    partition_id      TEXT NOT NULL DEFAULT '',
    email             TEXT NOT NULL,
    email_lower       TEXT NOT NULL,
    password_hash     TEXT NOT NULL DEFAULT '',
    first_name        TEXT NOT NULL DEFAULT '',
    last_name         TEXT NOT NULL DEFAULT '',
    status            TEXT NOT NULL,
    custom_attributes TEXT NOT NULL DEFAULT '{}',
    profile           TEXT NOT NULL DEFAULT '{}',
    totp_secret       BLOB,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (partition_id, email_lower)
);
INSERT INTO persons_new (id, email, email_lower, password_hash, first_name, last_name, status, custom_attributes,
    created_at, updated_at)
SELECT id, email, email_lower, password_hash, first_name, last_name, status, custom_attributes, created_at, updated_at
FROM persons;
DROP TABLE persons;
ALTER TABLE persons_new RENAME TO persons;

CREATE TABLE person_identities (
    partition_id       TEXT NOT NULL DEFAULT '',
    idp_id             TEXT NOT NULL,
    external_person_id TEXT NOT NULL,
    person_id          TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    PRIMARY KEY (partition_id, idp_id, external_person_id)
);
CREATE INDEX person_identities_person ON person_identities (person_id);

ALTER TABLE events ADD COLUMN partition_id TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN context TEXT NOT NULL DEFAULT '{}';
