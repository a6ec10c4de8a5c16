//! Database connection and migrations. sea-orm's `ConnectionTrait` is the seam between
//! SQLite (embedded), MySQL/MariaDB and PostgreSQL: one set of entities and migrations.

pub mod group_commit;
pub mod names;
pub mod settings;

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use migrations::{Migrator, MigratorTrait as _};
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseBackend, DatabaseConnection,
    DatabaseTransaction, DbErr, IsolationLevel, TransactionTrait,
};

use crate::db::settings::DatabaseSettings;

pub use names::StoredName;
pub use sea_orm::DatabaseConnection as Db;

/// Prepared statements kept per server connection (sqlx's default is 100).
const STATEMENT_CACHE: usize = 400;

/// A pooled connection idle this long is pinged before use (a ping on every checkout
/// costs ~10 % of throughput).
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(30);

/// A small pool of its own beside `db` whose PostgreSQL sessions start with `settings`
/// (planner switches for the one statement shape its user runs, so they reach nothing
/// else), with `db`'s connect options, acquire timeout and idle ping; elsewhere `db`
/// itself. Lazy: it connects on first use. The settings travel as startup options,
/// which a pooler in front of PostgreSQL must forward (docs/operations/running.md).
pub fn own_sessions(
    db: &DatabaseConnection,
    settings: &[(&str, &str)],
    connections: u32,
) -> DatabaseConnection {
    if db.get_database_backend() != DatabaseBackend::Postgres {
        return db.clone();
    }
    let shared = db.get_postgres_connection_pool();
    let options = (*shared.connect_options())
        .clone()
        .options(settings.iter().copied());
    let pool = sea_orm::sqlx::postgres::PgPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(shared.options().get_acquire_timeout())
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IF_IDLE_FOR {
                    sea_orm::sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect_lazy_with(options);
    counted(sea_orm::SqlxPostgresConnector::from_sqlx_postgres_pool(
        pool,
    ))
}

/// Opens a pool for `settings.url`, creating the directory of a SQLite file if needed.
pub async fn connect(settings: &DatabaseSettings) -> anyhow::Result<DatabaseConnection> {
    connect_url(&settings.url, settings.max_connections).await
}

pub async fn connect_url(url: &str, max_connections: u32) -> anyhow::Result<DatabaseConnection> {
    let is_sqlite = url.starts_with("sqlite:");
    if is_sqlite {
        ensure_sqlite_dir(url)?;
    }
    let mut opts = ConnectOptions::new(url.to_owned());
    opts.sqlx_logging(false)
        .connect_timeout(Duration::from_secs(5))
        .acquire_timeout(Duration::from_secs(10))
        // Only idle connections are tested (see PING_IF_IDLE_FOR).
        .test_before_acquire(false)
        .test_before_acquire_if_idle_for(PING_IF_IDLE_FOR);
    if is_sqlite {
        // SQLite has one writer: a single connection serialises statements instead of
        // failing them with SQLITE_BUSY. WAL keeps commits cheap.
        opts.max_connections(1).map_sqlx_sqlite_opts(|o| {
            o.journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(10))
        });
    } else {
        // Batched statements take a shape per batch size (see `ai_tasks::submitter`):
        // room for all of them, so each is prepared once per connection, not per use.
        opts.max_connections(max_connections)
            .map_sqlx_postgres_opts(|o| o.statement_cache_capacity(STATEMENT_CACHE))
            .map_sqlx_mysql_opts(|o| o.statement_cache_capacity(STATEMENT_CACHE))
            .map_sqlx_mysql_pool_opts(|o| {
                o.after_connect(|conn, _| {
                    Box::pin(async move {
                        use sea_orm::sqlx::Executor as _;
                        conn.execute(MYSQL_SESSION_INIT).await.map(|_| ())
                    })
                })
            });
    }
    Database::connect(opts)
        .await
        .map(counted)
        .with_context(|| format!("connecting to database {}", crate::config::mask_url(url)))
}

/// Statements this process has run on its pools, every backend: what the benches divide
/// by the work done (the statement costs in docs/performance.md).
static STATEMENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many statements this process has run so far.
pub fn statements_run() -> u64 {
    STATEMENTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// `db`, each of its statements counted in [`statements_run`].
fn counted(mut db: DatabaseConnection) -> DatabaseConnection {
    db.set_metric_callback(|_| {
        STATEMENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    db
}

/// The file of a SQLite URL; `None` for another database or an in-memory one.
fn sqlite_file(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite:")?.trim_start_matches("//");
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let in_memory = path.is_empty() || path == ":memory:" || query.contains("mode=memory");
    (!in_memory).then_some(path)
}

fn ensure_sqlite_dir(url: &str) -> anyhow::Result<()> {
    let Some(path) = sqlite_file(url) else {
        return Ok(());
    };
    if let Some(dir) = Path::new(path)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

/// Connects, and applies pending migrations first when `database.migrate_on_start`
/// (every process and command that opens the database goes through here).
pub async fn open(settings: &DatabaseSettings) -> anyhow::Result<DatabaseConnection> {
    // Migrations on a connection of their own, closed after: what migrating leaves on a
    // connection (a hundred cached statements; SQLite's page cache and parsed schema) goes
    // with it, not kept by a pool connection for the process's life (a fresh embedded
    // `serve` idled at 15 MiB anonymous, 11 when started already migrated). Not for an
    // in-memory SQLite database, which lives and dies with its connection.
    let in_memory = settings.url.starts_with("sqlite:") && sqlite_file(&settings.url).is_none();
    if settings.migrate_on_start && !in_memory {
        let once = connect_url(&settings.url, 1).await?;
        migrate(&once).await?;
        once.close()
            .await
            .context("closing the migrations' connection")?;
    }
    let db = connect(settings).await?;
    if settings.migrate_on_start && in_memory {
        migrate(&db).await?;
    }
    Ok(db)
}

/// Applies every pending migration.
pub async fn migrate(db: &DatabaseConnection) -> anyhow::Result<()> {
    Migrator::up(db, None).await.context("applying migrations")
}

/// A cheap round trip, for readiness checks.
pub async fn ping(db: &DatabaseConnection) -> Result<(), sea_orm::DbErr> {
    db.ping().await
}

/// The statement every MySQL/MariaDB connection runs once when it opens. Under the
/// default REPEATABLE READ a locking statement whose plan scans a small table locks
/// every row it scans (seen: batched credit reservations on a 200-row `users` table
/// serialized every writer); READ COMMITTED locks only the rows that match, and a
/// locking read re-checks the latest row version (the outbox relay relies on that).
/// It is also PostgreSQL's default, so both server backends run the same semantics.
/// Set per session rather than per transaction: `SET TRANSACTION` would cost a round
/// trip on every transaction.
const MYSQL_SESSION_INIT: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// Begins a READ COMMITTED transaction: MySQL/MariaDB sessions already are (see
/// [`MYSQL_SESSION_INIT`]); PostgreSQL says so explicitly, in case the server's default
/// was changed; SQLite has one writer and no levels.
pub async fn begin_read_committed(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    if db.get_database_backend() == DatabaseBackend::Postgres {
        db.begin_with_config(Some(IsolationLevel::ReadCommitted), None)
            .await
    } else {
        db.begin().await
    }
}

/// A UTC time as a statement value for the column it goes to. On MySQL/MariaDB columns
/// that must reach past 2038 are DATETIME (TIMESTAMP ends there), and a zoned value is sent
/// as a TIMESTAMP, which MariaDB stores as NULL past 2038: there it goes naive (UTC, by
/// the convention of every value this code writes). Write such columns through this.
pub fn utc_value(db: &impl ConnectionTrait, t: chrono::DateTime<chrono::Utc>) -> sea_orm::Value {
    if db.get_database_backend() == DatabaseBackend::MySql {
        t.naive_utc().into()
    } else {
        t.into()
    }
}

/// Whether the backend supports `FOR UPDATE SKIP LOCKED` (SQLite has one writer and needs none).
pub fn supports_skip_locked(db: &impl ConnectionTrait) -> bool {
    !matches!(db.get_database_backend(), DatabaseBackend::Sqlite)
}

/// `CAST(COALESCE(SUM(col), 0) AS <integer>)`: SUM of a BIGINT is NUMERIC on PostgreSQL
/// and DECIMAL on MySQL, which an `i64` cannot be read from; cast back to the integer
/// type each backend names.
pub fn integer_sum(
    db: &impl ConnectionTrait,
    col: impl sea_orm::sea_query::IntoColumnRef,
) -> sea_orm::sea_query::SimpleExpr {
    use sea_orm::sea_query::{Alias, Expr, ExprTrait as _, Func};
    let int = match db.get_database_backend() {
        DatabaseBackend::MySql => "SIGNED",
        _ => "BIGINT",
    };
    Func::cast_as(
        Func::coalesce([Expr::col(col).sum(), Expr::val(0)]),
        Alias::new(int),
    )
    .into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_sqlite_url_names_its_file_unless_in_memory() {
        use super::sqlite_file;
        assert_eq!(
            sqlite_file("sqlite://./data/conveyor.sqlite?mode=rwc"),
            Some("./data/conveyor.sqlite")
        );
        assert_eq!(sqlite_file("sqlite:/tmp/x.sqlite"), Some("/tmp/x.sqlite"));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(
            sqlite_file("sqlite://shared?mode=memory&cache=shared"),
            None
        );
        assert_eq!(sqlite_file("postgres://postgres@127.0.0.1:5432/x"), None);
    }
}
