//! Connections and channels: each opened on the first node that answers (from the one
//! the process last reached), re-opened after a loss, bounded by `connect_timeout_ms`.

use std::sync::Arc;
use std::time::Duration;

use lapin::options::ConfirmSelectOptions;
use lapin::{Channel, Connection, ConnectionProperties};

use super::Inner;
use super::bounded;
use super::declarations::declare;
use super::err;
use crate::broker::BrokerError;

impl Inner {
    /// A connection to the first node that answers, starting at the one the last
    /// long-lived connection reached (see [`Nodes`]), and that node's index.
    pub(super) async fn connect(&self, role: &str) -> Result<(Connection, usize), BrokerError> {
        let mut failures = Vec::new();
        for (idx, address) in self.nodes.in_order() {
            match self.connect_to(address, role).await {
                Ok(conn) => return Ok((conn, idx)),
                Err(e) => failures.push(format!("{}: {e}", self.nodes.label(idx))),
            }
        }
        Err(BrokerError::Connection(if self.nodes.len() == 1 {
            failures.concat()
        } else {
            format!("no broker node reachable ({})", failures.join("; "))
        }))
    }

    async fn connect_to(&self, address: &str, role: &str) -> Result<Connection, String> {
        let mut uri: lapin::uri::AMQPUri = address
            .parse()
            .map_err(|e: String| format!("bad broker address: {e}"))?;
        if uri.query.heartbeat.is_none() {
            uri.query.heartbeat = Some(self.settings.heartbeat_secs);
        }
        if uri.query.frame_max.is_none() {
            uri.query.frame_max = Some(self.settings.frame_max_bytes);
        }
        let name = format!(
            "conveyor-{role}-{}@{}",
            std::process::id(),
            self.topology.namespace
        );
        let props = ConnectionProperties::default().with_connection_name(name.into());
        let limit = Duration::from_millis(self.settings.connect_timeout_ms);
        match tokio::time::timeout(limit, Connection::connect_uri(uri, props)).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {limit:?}")),
        }
    }

    /// The confirm-mode publishing channel, (re)connecting and declaring as needed.
    pub(super) async fn publish_channel(&self) -> Result<Channel, BrokerError> {
        let mut guard = self.publisher.lock().await;
        if let Some((conn, ch)) = guard.as_ref()
            && conn.status().connected()
            && ch.status().connected()
        {
            return Ok(ch.clone());
        }
        *guard = None;
        self.ensure_open()?;
        let (conn, node) = self.connect("publish").await?;
        let conn = Arc::new(conn);
        bounded("declaring the topology", declare(&conn, &self.topology)).await?;
        let ch = conn.create_channel().await.map_err(err)?;
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(err)?;
        *guard = Some((conn, ch.clone()));
        self.nodes.reached("publish", node);
        Ok(ch)
    }

    /// A throwaway channel on the publishing connection (opened if need be), for calls
    /// that may close their channel (a passive declare of a missing queue) or must not
    /// share it (`basic_get`: whatever is left unacked goes back when it closes).
    pub(super) async fn scratch_channel(&self) -> Result<Channel, BrokerError> {
        self.publish_channel().await?;
        let conn = {
            let guard = self.publisher.lock().await;
            guard.as_ref().map(|(c, _)| c.clone())
        }
        .ok_or_else(|| BrokerError::Connection("publisher connection lost".into()))?;
        conn.create_channel().await.map_err(err)
    }

    fn ensure_open(&self) -> Result<(), BrokerError> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(BrokerError::Connection("broker closed".into()));
        }
        Ok(())
    }

    pub(super) async fn forget_publisher(&self) {
        *self.publisher.lock().await = None;
    }

    /// Drops `conn` from the cache if it is still the shared consumer connection: a
    /// channel could not be opened or used on it, so it may be dead without lapin having
    /// noticed yet (its status says connected until the heartbeat misses). The next
    /// consumer to start opens a fresh one instead of waiting on this one again.
    async fn forget_consumer_connection(&self, conn: &Arc<Connection>) {
        let mut guard = self.consumer_conn.lock().await;
        if guard.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *guard = None;
        }
    }

    /// A channel on the shared consumer connection, set up by `setup`, each part
    /// within [`OP_TIMEOUT`]. If the channel cannot be opened or set up, the connection
    /// is forgotten (see [`Inner::forget_consumer_connection`]).
    pub(super) async fn consumer_channel<T, F, Fut>(
        &self,
        what: &str,
        setup: F,
    ) -> Result<T, BrokerError>
    where
        F: FnOnce(Channel) -> Fut,
        Fut: std::future::Future<Output = Result<T, BrokerError>>,
    {
        let conn = bounded("connecting a consumer", self.consumer_connection()).await?;
        let result = bounded(what, async {
            let ch = conn.create_channel().await.map_err(err)?;
            setup(ch).await
        })
        .await;
        if result.is_err() {
            self.forget_consumer_connection(&conn).await;
        }
        result
    }

    async fn consumer_connection(&self) -> Result<Arc<Connection>, BrokerError> {
        let mut guard = self.consumer_conn.lock().await;
        if let Some(conn) = guard.as_ref()
            && conn.status().connected()
        {
            return Ok(conn.clone());
        }
        *guard = None;
        self.ensure_open()?;
        let (conn, node) = self.connect("consume").await?;
        let conn = Arc::new(conn);
        bounded("declaring the topology", declare(&conn, &self.topology)).await?;
        *guard = Some(conn.clone());
        self.nodes.reached("consume", node);
        Ok(conn)
    }
}
