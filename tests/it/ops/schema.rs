//! `src/db/schema.rs` says what the migrations make: the migrations are applied to a fresh
//! database of each backend, and its tables (in order, with their primary keys), columns
//! (in order, with diesel's type and nullability), foreign keys (`joinable!`) and the table
//! list are compared with what schema.rs declares. A new migration without a regenerated
//! schema (or a hand edit of either) fails here, naming the difference.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use onceform::db::Pool;

use crate::support::{test_config, Backend, TestDb};

/// A table as diesel sees it: primary key columns and `(column, type)` in order, the type
/// as diesel's `table!` writes it (`Nullable<Text>`).
#[derive(Debug, Default, PartialEq, Eq)]
struct Table {
    key: Vec<String>,
    columns: Vec<(String, String)>,
}

/// The tables, and the foreign keys diesel writes as `joinable!(child -> parent (column))`.
#[derive(Debug, Default, PartialEq, Eq)]
struct Schema {
    tables: BTreeMap<String, Table>,
    joins: BTreeSet<(String, String, String)>,
}

#[test]
fn schema_rs_matches_the_migrations() {
    let declared = declared();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let db = TestDb::new(backend);
        Pool::connect(&test_config(&db.url).database).unwrap();
        let migrated = match backend {
            Backend::Sqlite => sqlite(db.url.trim_start_matches("sqlite://")),
            Backend::Postgres => postgres(&db.url),
        };
        assert_same(&declared, &migrated, backend);
    }
}

/// Every difference, one line each, so that one run names all of them.
fn assert_same(declared: &Schema, migrated: &Schema, backend: Backend) {
    let mut diff = Vec::new();
    let names: BTreeSet<&String> = declared.tables.keys().chain(migrated.tables.keys()).collect();
    for name in names {
        match (declared.tables.get(name), migrated.tables.get(name)) {
            (Some(d), Some(m)) if d != m => {
                if d.key != m.key {
                    diff.push(format!("{name}: primary key {:?} in schema.rs, {:?} migrated", d.key, m.key));
                }
                column_diff(&mut diff, name, &d.columns, &m.columns);
            }
            (Some(_), None) => diff.push(format!("{name}: in schema.rs, not in the migrations")),
            (None, Some(_)) => diff.push(format!("{name}: migrated, missing from schema.rs")),
            _ => {}
        }
    }
    for j in declared.joins.symmetric_difference(&migrated.joins) {
        let place = if declared.joins.contains(j) { "in schema.rs only" } else { "migrated only" };
        diff.push(format!("joinable!({} -> {} ({})): {place}", j.0, j.1, j.2));
    }
    assert!(
        diff.is_empty(),
        "src/db/schema.rs differs from the migrations on {backend:?}; regenerate it with \
         `diesel migration run --database-url /tmp/onceform-schema.db` (migrations/README.md):\n{}",
        diff.join("\n")
    );
}

/// Each column that is missing, extra or typed otherwise; else the order, if that differs.
fn column_diff(
    diff: &mut Vec<String>,
    table: &str,
    declared: &[(String, String)],
    migrated: &[(String, String)],
) {
    let find =
        |cols: &[(String, String)], name: &str| cols.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone());
    let before = diff.len();
    for (name, _) in declared.iter().chain(migrated) {
        let line = match (find(declared, name), find(migrated, name)) {
            (Some(d), Some(m)) if d != m => format!("{table}.{name}: `{d}` in schema.rs, `{m}` migrated"),
            (Some(d), None) => format!("{table}.{name} -> {d}: in schema.rs, not migrated"),
            (None, Some(m)) => format!("{table}.{name} -> {m}: migrated, missing from schema.rs"),
            _ => continue,
        };
        if !diff[before..].contains(&line) {
            diff.push(line);
        }
    }
    if diff.len() == before && declared != migrated {
        let names = |cols: &[(String, String)]| cols.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        diff.push(format!(
            "{table}: columns in the order {:?} in schema.rs, {:?} migrated",
            names(declared),
            names(migrated)
        ));
    }
}

/// What src/db/schema.rs declares (the text diesel's CLI writes).
fn declared() -> Schema {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/db/schema.rs")).unwrap();
    let mut schema = Schema::default();
    let mut listed = BTreeSet::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == "diesel::table! {" {
            let head = lines.next().unwrap();
            let (name, key) = head.trim_end_matches(" {").split_once(" (").unwrap();
            let key = key.trim_end_matches(')').split(", ").map(String::from).collect();
            let mut table = Table { key, columns: Vec::new() };
            for column in lines.by_ref().take_while(|l| *l != "}") {
                let (name, ty) = column.trim_end_matches(',').split_once(" -> ").unwrap();
                table.columns.push((name.to_string(), ty.to_string()));
            }
            schema.tables.insert(name.to_string(), table);
        } else if let Some(join) = line.strip_prefix("diesel::joinable!(") {
            let (child, rest) = join.split_once(" -> ").unwrap();
            let (parent, column) = rest.trim_end_matches("));").split_once(" (").unwrap();
            schema.joins.insert((child.into(), parent.into(), column.into()));
        } else if line == "diesel::allow_tables_to_appear_in_same_query!(" {
            listed = lines
                .by_ref()
                .take_while(|l| *l != ");")
                .map(|l| l.trim_end_matches(',').to_string())
                .collect();
        }
    }
    let tables: BTreeSet<String> = schema.tables.keys().cloned().collect();
    assert_eq!(listed, tables, "allow_tables_to_appear_in_same_query! lists every table");
    schema
}

/// diesel's name for a column's SQL type, as its CLI prints it.
fn diesel_type(sql: &str, nullable: bool) -> String {
    let ty = match sql.to_ascii_lowercase().as_str() {
        "text" => "Text",
        "integer" | "int" | "int4" => "Integer",
        "bigint" | "int8" => "BigInt",
        "timestamp" | "timestamp without time zone" => "Timestamp",
        "boolean" | "bool" => "Bool",
        "double precision" | "double" | "float8" => "Double",
        "bytea" => "Binary",
        other => panic!("no diesel type known for the SQL type `{other}`: extend this test"),
    };
    if nullable {
        format!("Nullable<{ty}>")
    } else {
        ty.to_string()
    }
}

/// Foreign keys as diesel writes them: one `joinable!` per child and parent, and none where a
/// child has several keys to one parent (diesel could not tell which to join on).
fn joins(keys: Vec<(String, String, String)>) -> BTreeSet<(String, String, String)> {
    let mut per_pair: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (child, parent, column) in keys {
        per_pair.entry((child, parent)).or_default().push(column);
    }
    per_pair
        .into_iter()
        .filter(|(_, columns)| columns.len() == 1)
        .map(|((child, parent), mut columns)| (child, parent, columns.remove(0)))
        .collect()
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

#[derive(QueryableByName)]
struct SqliteColumn {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    ty: String,
    #[diesel(sql_type = BigInt)]
    notnull: i64,
    #[diesel(sql_type = BigInt)]
    pk: i64,
}

#[derive(QueryableByName)]
struct ForeignKey {
    #[diesel(sql_type = Text)]
    parent: String,
    #[diesel(sql_type = Text)]
    column: String,
}

fn sqlite(path: &str) -> Schema {
    let c = &mut SqliteConnection::establish(path).unwrap();
    let names: Vec<Name> = diesel::sql_query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         AND name <> '__diesel_schema_migrations' ORDER BY name",
    )
    .load(c)
    .unwrap();
    let mut schema = Schema::default();
    let mut keys = Vec::new();
    for Name { name } in names {
        let columns: Vec<SqliteColumn> = diesel::sql_query(format!(
            "SELECT name, type AS ty, \"notnull\", pk FROM pragma_table_info('{name}') ORDER BY cid"
        ))
        .load(c)
        .unwrap();
        let mut key: Vec<(i64, String)> =
            columns.iter().filter(|c| c.pk > 0).map(|c| (c.pk, c.name.clone())).collect();
        key.sort();
        let table = Table {
            key: key.into_iter().map(|(_, n)| n).collect(),
            // A primary key column is never NULL in diesel's eyes, whatever SQLite allows.
            columns: columns
                .iter()
                .map(|c| (c.name.clone(), diesel_type(&c.ty, c.notnull == 0 && c.pk == 0)))
                .collect(),
        };
        let fks: Vec<ForeignKey> = diesel::sql_query(format!(
            "SELECT \"table\" AS parent, \"from\" AS column FROM pragma_foreign_key_list('{name}')"
        ))
        .load(c)
        .unwrap();
        keys.extend(fks.into_iter().map(|f| (name.clone(), f.parent, f.column)));
        schema.tables.insert(name, table);
    }
    schema.joins = joins(keys);
    schema
}

#[derive(QueryableByName)]
struct PgColumn {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    ty: String,
    #[diesel(sql_type = Text)]
    nullable: String,
}

#[derive(QueryableByName)]
struct PgForeignKey {
    #[diesel(sql_type = Text)]
    child: String,
    #[diesel(sql_type = Text)]
    parent: String,
    #[diesel(sql_type = Text)]
    column: String,
}

fn postgres(url: &str) -> Schema {
    let c = &mut PgConnection::establish(url).unwrap();
    let names: Vec<Name> = diesel::sql_query(
        "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = 'public' \
         AND table_type = 'BASE TABLE' AND table_name <> '__diesel_schema_migrations' ORDER BY 1",
    )
    .load(c)
    .unwrap();
    let mut schema = Schema::default();
    for Name { name } in names {
        let columns: Vec<PgColumn> = diesel::sql_query(
            "SELECT column_name::text AS name, data_type::text AS ty, is_nullable::text AS nullable \
             FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 \
             ORDER BY ordinal_position",
        )
        .bind::<Text, _>(&name)
        .load(c)
        .unwrap();
        let key: Vec<Name> = diesel::sql_query(
            "SELECT k.column_name::text AS name FROM information_schema.table_constraints t \
             JOIN information_schema.key_column_usage k USING (constraint_schema, constraint_name) \
             WHERE t.table_schema = 'public' AND t.table_name = $1 AND t.constraint_type = 'PRIMARY KEY' \
             ORDER BY k.ordinal_position",
        )
        .bind::<Text, _>(&name)
        .load(c)
        .unwrap();
        let table = Table {
            key: key.into_iter().map(|k| k.name).collect(),
            columns: columns
                .iter()
                .map(|c| (c.name.clone(), diesel_type(&c.ty, c.nullable == "YES")))
                .collect(),
        };
        schema.tables.insert(name, table);
    }
    let fks: Vec<PgForeignKey> = diesel::sql_query(
        "SELECT k.table_name::text AS child, u.table_name::text AS parent, k.column_name::text AS column \
         FROM information_schema.table_constraints t \
         JOIN information_schema.key_column_usage k USING (constraint_schema, constraint_name) \
         JOIN information_schema.constraint_column_usage u USING (constraint_schema, constraint_name) \
         WHERE t.table_schema = 'public' AND t.constraint_type = 'FOREIGN KEY'",
    )
    .load(c)
    .unwrap();
    schema.joins = joins(fks.into_iter().map(|f| (f.child, f.parent, f.column)).collect());
    schema
}
