ALTER TABLE persons ADD COLUMN custom_attributes TEXT NOT NULL DEFAULT '{}';
