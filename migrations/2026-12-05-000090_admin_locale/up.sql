-- The admin pages' language each user chose (`en`, `zh-TW`, `zh-CN`, `ja`); NULL: the
-- configuration's `[admin] locale`.
ALTER TABLE users ADD COLUMN locale TEXT;
