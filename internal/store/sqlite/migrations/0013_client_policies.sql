-- Per-client opt-ins of the security round (docs/SECURITY.md):
-- introspect_any_token lets a confidential client introspect tokens issued to
-- other clients (a resource server); device_approval_clients lists the clients
-- whose device flows this client's tokens may approve in-app.
ALTER TABLE clients ADD COLUMN introspect_any_token INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN device_approval_clients TEXT NOT NULL DEFAULT '[]';
