-- A link made by a sign-in that did not prove the account's email (a new
-- account from an upstream that does not vouch for it): the address's
-- proof, an activation or reset by mail, ends it (issue 59).
ALTER TABLE person_identities ADD COLUMN unproven INTEGER NOT NULL DEFAULT 0;
