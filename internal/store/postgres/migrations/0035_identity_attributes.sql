-- The attributes an upstream identity provider sent that no mapping of its
-- login method took (docs/FEDERATION.md): kept on the linked identity,
-- apart from the person's profile and custom attributes, never released.
ALTER TABLE person_identities ADD COLUMN attributes TEXT NOT NULL DEFAULT '{}';
