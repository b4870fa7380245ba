-- Person accounts of the import API: a partition (emails are unique within
-- one), the full profile as JSON, a sealed TOTP secret, and linked external
-- identities. Events carry the partition and the flow context.
ALTER TABLE persons ADD COLUMN partition_id TEXT NOT NULL DEFAULT '';
ALTER TABLE persons ADD COLUMN profile TEXT NOT NULL DEFAULT '{}';
ALTER TABLE persons ADD COLUMN totp_secret BYTEA;
ALTER TABLE persons DROP CONSTRAINT persons_email_lower_key;
ALTER TABLE persons ADD CONSTRAINT persons_partition_email UNIQUE (partition_id, email_lower);

CREATE TABLE person_identities (
    partition_id       TEXT NOT NULL DEFAULT '',
    idp_id             TEXT NOT NULL,
    external_person_id TEXT NOT NULL,
    person_id          TEXT NOT NULL,
    created_at         BIGINT NOT NULL,
    PRIMARY KEY (partition_id, idp_id, external_person_id)
);
CREATE INDEX person_identities_person ON person_identities (person_id);

ALTER TABLE events ADD COLUMN partition_id TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN context TEXT NOT NULL DEFAULT '{}';
