-- Blocking or deleting a person revokes everything the person holds
-- (RevokePerson): these find a person's grants and sessions without a scan.
-- Client-credentials grants have no subject and are most of the grants: the
-- partial index leaves them out, so that hot insert maintains no extra
-- b-tree. Queries name the index's condition (subject <> '') so the planner
-- may use it. A person's tokens are found through their grants
-- (tokens_grant).
CREATE INDEX grants_subject ON grants (subject) WHERE subject <> '';
CREATE INDEX sessions_person ON sessions (person_id);
