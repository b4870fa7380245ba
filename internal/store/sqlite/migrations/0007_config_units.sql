-- Identity-management configuration: one row per unit (features,
-- attributes, ...), its body the unit's JSON; "" means never set (defaults).
-- The rows exist from the start, so a read-modify-write always has a row
-- to lock.
CREATE TABLE config_units (
    name       TEXT PRIMARY KEY,
    body       TEXT NOT NULL DEFAULT '',
    updated_at BIGINT NOT NULL DEFAULT 0
);
INSERT INTO config_units (name) VALUES ('features'), ('attributes'), ('ui_extension'), ('step_up'),
    ('login_methods'), ('redirects'), ('organisations'), ('key_pairs'), ('custom_messages'),
    ('email_notifications'), ('password_policy'), ('profile');
