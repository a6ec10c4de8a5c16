//! [`Txn`]: the recorder's transaction as listeners see it. Listeners are registered as
//! trait objects (one list per process, whatever domains it runs), so they cannot take a
//! generic `&impl ConnectionTrait`; this wraps the caller's connection (a transaction,
//! or a pool) behind an object-safe trait and is itself a [`ConnectionTrait`], so a
//! listener queries and inserts through it as through the caller's own handle: same
//! connection, same transaction.

use sea_orm::{ConnectionTrait, DbBackend, DbErr, ExecResult, QueryResult, Statement};

/// The object-safe part of [`ConnectionTrait`] (its raw calls), for any connection.
#[async_trait::async_trait]
trait Raw: Sync {
    fn backend(&self) -> DbBackend;
    fn returning(&self) -> bool;
    async fn execute(&self, stmt: Statement) -> Result<ExecResult, DbErr>;
    async fn unprepared(&self, sql: &str) -> Result<ExecResult, DbErr>;
    async fn one(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr>;
    async fn all(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr>;
}

#[async_trait::async_trait]
impl<C: ConnectionTrait> Raw for C {
    fn backend(&self) -> DbBackend {
        self.get_database_backend()
    }
    fn returning(&self) -> bool {
        self.support_returning()
    }
    async fn execute(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.execute_raw(stmt).await
    }
    async fn unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.execute_unprepared(sql).await
    }
    async fn one(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.query_one_raw(stmt).await
    }
    async fn all(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.query_all_raw(stmt).await
    }
}

/// The recorder's connection (usually its transaction), handed to listeners.
#[derive(Clone, Copy)]
pub struct Txn<'a>(&'a dyn Raw);

impl<'a> Txn<'a> {
    pub fn new<C: ConnectionTrait>(conn: &'a C) -> Self {
        Txn(conn)
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for Txn<'_> {
    fn get_database_backend(&self) -> DbBackend {
        self.0.backend()
    }

    fn support_returning(&self) -> bool {
        self.0.returning()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.0.execute(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.0.unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.0.one(stmt).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.0.all(stmt).await
    }
}
