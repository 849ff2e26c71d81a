//! Raw SQL statements with typed binds that the connection keeps prepared.
//!
//! diesel's `sql_query` opts out of the statement cache, so the database parses, analyses
//! and plans it on every call: on PostgreSQL, for the accept statement, that was about a
//! third of the machine's CPU under load; on SQLite the duplicate look-up of every accept
//! was compiled anew. A `Prepared` statement is cached per connection under its SQL text
//! (and bind types) like any query-builder query; with `database.prepared_statements =
//! false` (a PostgreSQL transaction-pooling pooler) the cache is off and it is sent
//! unnamed, as `sql_query` would be.

use std::marker::PhantomData;
use std::sync::Arc;

use diesel::backend::Backend;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};
use diesel::{QueryResult, RunQueryDsl};

/// A time as SQLite stores a `Timestamp` (diesel's text form), to bind as `Text` where one
/// statement compares a time many times: formatted once instead of once per placeholder.
pub fn sqlite_time(t: chrono::NaiveDateTime) -> String {
    t.format("%F %T%.f").to_string()
}

/// `n` placeholders from `$first` on.
pub fn placeholders(first: usize, n: usize) -> Vec<String> {
    (first..first + n).map(|i| format!("${i}")).collect()
}

/// SQL text with `$n` placeholders (each may appear any number of times) and the values
/// of `$1`, `$2`, … in order; sent with the backend's own placeholders.
pub struct Prepared<'a, DB: Backend = Pg> {
    sql: Arc<str>,
    binds: Vec<Box<dyn QueryFragment<DB> + Send + 'a>>,
}

impl<'a, DB: Backend> Prepared<'a, DB> {
    pub fn new(sql: impl Into<Arc<str>>) -> Self {
        Prepared { sql: sql.into(), binds: Vec::new() }
    }

    /// The next placeholder's value, as SQL type `ST`.
    pub fn bind<ST, U>(mut self, value: U) -> Self
    where
        DB: HasSqlType<ST>,
        U: ToSql<ST, DB> + Send + 'a,
        ST: 'a,
    {
        self.binds.push(Box::new(Bind { value, sql_type: PhantomData::<fn() -> ST> }));
        self
    }
}

struct Bind<ST, U> {
    value: U,
    sql_type: PhantomData<fn() -> ST>,
}

impl<ST, U, DB> QueryFragment<DB> for Bind<ST, U>
where
    DB: Backend + HasSqlType<ST>,
    U: ToSql<ST, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_bind_param::<ST, U>(&self.value)
    }
}

/// Writes the SQL with each `$n` replaced by the next placeholder diesel numbers, binding
/// value `n` there: a value used twice is sent twice (diesel numbers placeholders itself
/// and sends one value per placeholder).
impl<DB: Backend> QueryFragment<DB> for Prepared<'_, DB> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let mut rest = &*self.sql;
        while let Some(at) = rest.find('$') {
            let digits = rest[at + 1..].bytes().take_while(u8::is_ascii_digit).count();
            out.push_sql(&rest[..at]);
            if digits == 0 {
                out.push_sql("$");
            } else {
                let n: usize = rest[at + 1..=at + digits].parse().map_err(|_| unbound(&rest[at..]))?;
                let bind =
                    n.checked_sub(1).and_then(|i| self.binds.get(i)).ok_or_else(|| unbound(&rest[at..]))?;
                bind.walk_ast(out.reborrow())?;
            }
            rest = &rest[at + 1 + digits..];
        }
        out.push_sql(rest);
        Ok(())
    }
}

fn unbound(at: &str) -> diesel::result::Error {
    let placeholder: String = at.chars().take(12).collect();
    diesel::result::Error::QueryBuilderError(format!("no value bound for {placeholder}").into())
}

/// No static ID: the cache key is the SQL text and the bind types.
impl<DB: Backend> QueryId for Prepared<'_, DB> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<DB: Backend> Query for Prepared<'_, DB> {
    type SqlType = Untyped;
}

impl<Conn, DB: Backend> RunQueryDsl<Conn> for Prepared<'_, DB> {}

#[cfg(test)]
mod tests {
    use diesel::sql_types::{Integer, Text};

    use super::*;

    #[test]
    fn each_use_of_a_placeholder_is_sent_as_the_next_one_with_its_value() {
        let q = Prepared::new("SELECT $2, $1 WHERE x = $2 AND y = '$'")
            .bind::<Integer, _>(7)
            .bind::<Text, _>("seven");
        let shown = diesel::debug_query::<Pg, _>(&q).to_string();
        assert_eq!(shown, r#"SELECT $1, $2 WHERE x = $3 AND y = '$' -- binds: ["seven", 7, "seven"]"#);
    }

    #[test]
    fn on_sqlite_each_placeholder_becomes_a_question_mark_with_its_value() {
        use diesel::sqlite::Sqlite;
        let q = Prepared::<Sqlite>::new("SELECT $2 WHERE x IN ($1, $2)")
            .bind::<Integer, _>(7)
            .bind::<Text, _>("seven");
        let shown = diesel::debug_query::<Sqlite, _>(&q).to_string();
        assert_eq!(shown, r#"SELECT ? WHERE x IN (?, ?) -- binds: ["seven", 7, "seven"]"#);
    }

    #[test]
    fn a_time_bound_as_sqlite_text_is_the_text_sqlite_stores() {
        use diesel::connection::SimpleConnection;
        use diesel::sql_types::Timestamp;
        use diesel::sqlite::{Sqlite, SqliteConnection};
        use diesel::Connection;
        #[derive(diesel::QueryableByName)]
        struct Same {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            same: bool,
        }
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        c.batch_execute("CREATE TABLE t (at TIMESTAMP NOT NULL)").unwrap();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 12, 6).unwrap();
        for t in [day.and_hms_opt(9, 5, 7).unwrap(), day.and_hms_micro_opt(23, 59, 59, 120).unwrap()] {
            Prepared::<Sqlite>::new("DELETE FROM t").execute(&mut c).unwrap();
            Prepared::<Sqlite>::new("INSERT INTO t (at) VALUES ($1)")
                .bind::<Timestamp, _>(t)
                .execute(&mut c)
                .unwrap();
            let q = Prepared::<Sqlite>::new("SELECT at = $1 AS same FROM t").bind::<Text, _>(sqlite_time(t));
            assert!(q.get_result::<Same>(&mut c).unwrap().same, "{t}");
        }
    }

    #[test]
    fn a_placeholder_without_a_value_is_an_error_not_a_null() {
        let q = Prepared::new("SELECT $1, $2").bind::<Integer, _>(1);
        let mut builder = diesel::pg::PgQueryBuilder::default();
        assert!(QueryFragment::<Pg>::to_sql(&q, &mut builder, &Pg).is_err());
    }
}
