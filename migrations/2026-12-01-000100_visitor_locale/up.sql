-- The locale a visitor on a `locale = "auto"` form was served in (negotiated from
-- Accept-Language): their confirmation email is written in it. NULL: the form's own locale.
ALTER TABLE submissions ADD COLUMN locale TEXT;
