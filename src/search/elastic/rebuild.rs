//! A rebuild into a new index beside the live one, made live by one `_aliases` request.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::ElasticIndex;
use super::check;
use super::unavailable;
use crate::search::{Op, Outcome, Rebuild, SearchError};

/// A rebuild into `name`, made live by one `_aliases` request.
pub(super) struct ElasticRebuild {
    pub(super) index: ElasticIndex,
    pub(super) name: String,
}

#[async_trait]
impl Rebuild for ElasticRebuild {
    fn target(&self) -> &str {
        &self.name
    }

    async fn bulk(&self, ops: Vec<Op>) -> Result<Vec<Outcome>, SearchError> {
        self.index.bulk_into(&self.name, ops).await
    }

    async fn swap(self: Box<Self>) -> Result<Vec<String>, SearchError> {
        let old = self.index.live_indices().await?;
        let mut actions: Vec<Value> = old
            .iter()
            .map(|i| json!({ "remove": { "index": i, "alias": self.index.alias } }))
            .collect();
        actions.push(json!({ "add": { "index": self.name, "alias": self.index.alias } }));
        let r = self
            .index
            .client
            .indices()
            .update_aliases()
            .body(json!({ "actions": actions }))
            .send()
            .await
            .map_err(unavailable)?;
        check(r).await?;
        self.index.delete_indices(&old).await?;
        Ok(old)
    }
}
