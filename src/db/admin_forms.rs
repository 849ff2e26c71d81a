//! `admin_forms`: the forms an admin defined in `/admin/forms`, one row per form (its
//! `[forms.NAME]` section as written, its version, who saved it and when), replaced by
//! each edit. Every version is kept in `form_versions` too.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{admin_forms, side_effects, submissions};
use super::DbConnection;
use crate::domain::EffectState;

/// One form as an admin saved it.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = admin_forms)]
pub struct AdminFormRow {
    pub name: String,
    /// The `[forms.NAME]` section (TOML).
    pub source: String,
    pub version: String,
    pub saved_by: String,
    pub saved_at: NaiveDateTime,
}

pub trait AdminForms {
    /// Every admin-defined form, in name order.
    fn admin_forms(&mut self) -> QueryResult<Vec<AdminFormRow>>;
    /// The (name, version) of every admin-defined form, in name order: what a process
    /// compares with the set it merged, to know when another one saved an edit.
    fn admin_form_versions(&mut self) -> QueryResult<Vec<(String, String)>>;
    /// One admin-defined form.
    fn admin_form(&mut self, name: &str) -> QueryResult<Option<AdminFormRow>>;
    /// Saves `row` (a new form, or a new version of one).
    fn put_admin_form(&mut self, row: &AdminFormRow) -> QueryResult<()>;
    /// Deletes the admin-defined form `name` (its versions stay in `form_versions`).
    fn delete_admin_form(&mut self, name: &str) -> QueryResult<()>;
    /// How many effect records of `form`'s submissions are not finished (waiting, being
    /// sent, or of unknown outcome).
    fn unfinished_effects_of(&mut self, form: &str) -> QueryResult<i64>;
}

impl AdminForms for DbConnection {
    fn admin_forms(&mut self) -> QueryResult<Vec<AdminFormRow>> {
        admin_forms::table.order(admin_forms::name).select(AdminFormRow::as_select()).load(self)
    }

    fn admin_form_versions(&mut self) -> QueryResult<Vec<(String, String)>> {
        admin_forms::table
            .order(admin_forms::name)
            .select((admin_forms::name, admin_forms::version))
            .load(self)
    }

    fn admin_form(&mut self, name: &str) -> QueryResult<Option<AdminFormRow>> {
        admin_forms::table
            .filter(admin_forms::name.eq(name))
            .select(AdminFormRow::as_select())
            .first(self)
            .optional()
    }

    fn put_admin_form(&mut self, row: &AdminFormRow) -> QueryResult<()> {
        let updated = diesel::update(admin_forms::table.filter(admin_forms::name.eq(&row.name)))
            .set(row)
            .execute(self)?;
        if updated == 0 {
            diesel::insert_into(admin_forms::table).values(row).execute(self)?;
        }
        Ok(())
    }

    fn delete_admin_form(&mut self, name: &str) -> QueryResult<()> {
        diesel::delete(admin_forms::table.filter(admin_forms::name.eq(name))).execute(self).map(|_| ())
    }

    fn unfinished_effects_of(&mut self, form: &str) -> QueryResult<i64> {
        let unfinished = [EffectState::Pending, EffectState::Sending, EffectState::Unknown];
        side_effects::table
            .inner_join(submissions::table)
            .filter(submissions::form.eq(form))
            .filter(side_effects::state.eq_any(unfinished.map(|s| s.as_str())))
            .count()
            .get_result(self)
    }
}
