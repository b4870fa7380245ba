-- OpenID Connect client metadata (docs/OIDC.md): post_logout_redirect_uris
-- for RP-initiated logout (exact match), access_token_format jwt | opaque
-- (RFC 9068 access tokens; '' is opaque). Expand only: the previous release
-- never reads them.
ALTER TABLE clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE clients ADD COLUMN access_token_format TEXT NOT NULL DEFAULT '';
