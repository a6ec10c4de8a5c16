//! What PostgreSQL did during a stretch of a bench, per unit of work: transactions and
//! rows written by table (`pg_stat_database`, `pg_stat_user_tables`), and statements
//! (`pg_stat_statements`, where the extension is loaded). The per-task cost that a
//! feature on the task path adds shows here first: a row more per task in some table, a
//! transaction more, a statement more.
//!
//! PostgreSQL (15+) flushes a backend's counters when it goes idle, at most once a second
//! and otherwise within [`FLUSH`]: a snapshot waits that long first, so the counts of the
//! stretch before it are in and none of the stretch after it are.

use std::collections::BTreeMap;
use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};

/// How long a busy backend may hold its counters before they are visible to others.
pub const FLUSH: Duration = Duration::from_secs(11);

/// Counters of the current database at one moment.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub commits: i64,
    pub rollbacks: i64,
    /// Statements executed (every query of the database), if pg_stat_statements is loaded.
    pub statements: Option<i64>,
    /// By statement (pg_stat_statements' normalised text): (calls, rows, milliseconds
    /// spent executing).
    pub by_statement: BTreeMap<String, (i64, i64, f64)>,
    /// (inserted, updated, deleted, of the updates HOT) by table.
    pub tables: BTreeMap<String, (i64, i64, i64, i64)>,
}

/// The counters now, after waiting [`FLUSH`]; `None` on a database other than PostgreSQL.
pub async fn snapshot(db: &DatabaseConnection) -> Option<Snapshot> {
    if db.get_database_backend() != DbBackend::Postgres {
        return None;
    }
    tokio::time::sleep(FLUSH).await;
    let one = |sql: &str| Statement::from_string(DbBackend::Postgres, sql.to_owned());
    let mut s = Snapshot::default();
    let row = db
        .query_one_raw(one(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()",
        ))
        .await
        .ok()??;
    s.commits = row.try_get_by_index(0).ok()?;
    s.rollbacks = row.try_get_by_index(1).ok()?;
    // Only where the extension is preloaded (scripts/services.sh does); the view exists in
    // a database once the extension is created there (a bench's scratch database is new).
    let _ = db
        .execute_raw(one("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
        .await;
    if let Ok(rows) = db
        .query_all_raw(one(
            "SELECT query, sum(calls)::bigint, sum(rows)::bigint, sum(total_exec_time)::float8 FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY query",
        ))
        .await
    {
        for r in rows {
            let (Ok(q), Ok(c), Ok(n), Ok(ms)) = (
                r.try_get_by_index::<String>(0),
                r.try_get_by_index::<i64>(1),
                r.try_get_by_index::<i64>(2),
                r.try_get_by_index::<f64>(3),
            ) else {
                continue;
            };
            s.by_statement.insert(q, (c, n, ms));
        }
    }
    if let Ok(Some(row)) = db
        .query_one_raw(one(
            "SELECT sum(calls)::bigint FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
        ))
        .await
    {
        s.statements = row.try_get_by_index(0).ok();
    }
    let rows = db
        .query_all_raw(one(
            "SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd FROM pg_stat_user_tables",
        ))
        .await
        .ok()?;
    for r in rows {
        let name: String = r.try_get_by_index(0).ok()?;
        let counts = (
            r.try_get_by_index(1).ok()?,
            r.try_get_by_index(2).ok()?,
            r.try_get_by_index(3).ok()?,
            r.try_get_by_index(4).ok()?,
        );
        s.tables.insert(name, counts);
    }
    Some(s)
}

/// What happened between `before` and `after`, per one of `n` units, as lines to print:
/// transactions, statements, and the rows written in each table that was written.
pub fn per_unit(before: &Snapshot, after: &Snapshot, n: usize) -> Vec<String> {
    let per = |d: i64| d as f64 / n.max(1) as f64;
    let mut lines = vec![format!(
        "transactions {:.2} (rollbacks {:.2}), statements {}",
        per(after.commits - before.commits),
        per(after.rollbacks - before.rollbacks),
        match (before.statements, after.statements) {
            (Some(b), Some(a)) => format!("{:.2}", per(a - b)),
            _ => "not counted (pg_stat_statements not loaded)".to_owned(),
        }
    )];
    let mut written: Vec<(String, f64, f64, f64, f64)> = after
        .tables
        .iter()
        .map(|(t, (i, u, d, h))| {
            let (bi, bu, bd, bh) = before.tables.get(t).copied().unwrap_or_default();
            (
                t.clone(),
                per(i - bi),
                per(u - bu),
                per(d - bd),
                per(h - bh),
            )
        })
        .filter(|(_, i, u, d, _)| i + u + d > 0.0)
        .collect();
    written.sort_by(|a, b| (b.1 + b.2 + b.3).total_cmp(&(a.1 + a.2 + a.3)));
    let total: f64 = written.iter().map(|(_, i, u, d, _)| i + u + d).sum();
    lines.push(format!(
        "rows written {total:.2} (+inserted ~updated, of them HOT, -deleted):"
    ));
    for (t, i, u, d, h) in written {
        lines.push(format!("  {t}: +{i:.2} ~{u:.2} ({h:.2} HOT) -{d:.2}"));
    }
    lines.extend(statements(before, after, n));
    lines
}

/// The statements that ran in the stretch, most frequent first: calls, rows and execution
/// time per unit, and the statement's text cut to one line (transaction control and the
/// bench's own snapshot queries included: they are part of what the database did).
fn statements(before: &Snapshot, after: &Snapshot, n: usize) -> Vec<String> {
    let per = |d: f64| d / n.max(1) as f64;
    // A batch of 3 rows and one of 30 are different statements to PostgreSQL (their
    // VALUES lists differ); here they are one: the text up to its second row.
    let mut grouped: BTreeMap<String, (f64, f64, f64)> = BTreeMap::new();
    for (q, (c, r, ms)) in &after.by_statement {
        let (bc, br, bms) = before.by_statement.get(q).copied().unwrap_or_default();
        let text = placeholders_folded(&q.split_whitespace().collect::<Vec<_>>().join(" "));
        let key = match text.find("), (") {
            Some(at) => format!("{}), …", &text[..at]),
            None => text,
        };
        let g = grouped.entry(key).or_default();
        g.0 += (c - bc) as f64;
        g.1 += (r - br) as f64;
        g.2 += ms - bms;
    }
    let mut ran: Vec<(f64, f64, f64, &str)> = grouped
        .iter()
        .map(|(q, (c, r, ms))| (per(*c), per(*r), per(*ms), q.as_str()))
        .filter(|(c, ..)| *c > 0.0)
        .collect();
    if ran.is_empty() {
        return Vec::new();
    }
    ran.sort_by(|a, b| b.0.total_cmp(&a.0));
    let exec: f64 = ran.iter().map(|(_, _, ms, _)| ms).sum();
    let mut lines = vec![format!(
        "statements per unit (calls, rows, exec µs; executing took {:.0} µs in all):",
        exec * 1000.0
    )];
    for (c, r, ms, q) in ran.iter().filter(|(c, ..)| *c >= 0.01) {
        let cut: String = q.chars().take(150).collect();
        lines.push(format!("  {c:.2} {r:.2} {:.0}  {cut}", ms * 1000.0));
    }
    lines
}

/// `$1, $2, $3` → `$…`: an `IN (…)` list of 3 ids and one of 30 are one statement here.
fn placeholders_folded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            if !out.ends_with("$…") && !out.ends_with("$…, ") {
                out.push_str("$…");
            } else if out.ends_with(", ") {
                out.truncate(out.len() - 2);
            }
        } else {
            out.push(c);
        }
    }
    out
}
