-- A test submission made from the admin's form page (`/admin/forms/{form}/preview`): stored
-- like any other, shown with a "test" badge, given no side-effect records and left out of
-- duplicate detection.
ALTER TABLE submissions ADD COLUMN test BOOLEAN NOT NULL DEFAULT FALSE;
