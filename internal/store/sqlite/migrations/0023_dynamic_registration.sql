-- Dynamic client registration (RFC 7591, RFC 7592; docs/ADMIN.md): the
-- keyed hash of a registered client's registration_access_token, NULL for
-- clients the operator created. Expand only: the previous release never
-- reads it.
ALTER TABLE clients ADD COLUMN registration_hash BLOB;
