-- The forms an admin defined in `/admin/forms` (`services::admin_forms`): each form's
-- `[forms.NAME]` section as the admin wrote it (TOML, the configuration file's syntax),
-- the version of its definition (`config::definition`, also stored in `form_versions`),
-- who saved it and when. One row per form, replaced by each edit; every version stays in
-- `form_versions` and every save in the audit log. A form the configuration file defines
-- is never read from here (the file is authoritative for the forms it names).
CREATE TABLE admin_forms (
    name TEXT PRIMARY KEY NOT NULL,
    source TEXT NOT NULL,
    version TEXT NOT NULL,
    saved_by TEXT NOT NULL,
    saved_at TIMESTAMP NOT NULL
);
