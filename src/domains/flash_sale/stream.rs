//! The `order` live stream: a buyer's page follows QUEUED → UNPAID → PAID/CANCELED.

use async_trait::async_trait;
use sea_orm::{DatabaseConnection, DbErr};

use super::messages::{OrderEvent, STREAM};
use super::store;
use super::view::OrderView;
use crate::live::{Event, Snapshot, Source};

pub struct OrderStream {
    /// `flash_sale.currency`, shown with the order's price.
    pub currency: String,
}

#[async_trait]
impl Source for OrderStream {
    fn kind(&self) -> &'static str {
        STREAM
    }

    async fn snapshot(&self, db: &DatabaseConnection, id: &str) -> Result<Option<Snapshot>, DbErr> {
        Ok(store::get_order(db, id).await?.map(|o| Snapshot {
            owner: o.user_id.clone(),
            seq: i64::from(o.seq),
            terminal: o.status.is_terminal(),
            view: serde_json::to_value(OrderView::new(o, &self.currency)).unwrap_or_default(),
        }))
    }

    async fn events_after(
        &self,
        db: &DatabaseConnection,
        id: &str,
        owner: &str,
        after: i64,
    ) -> Result<Vec<Event>, DbErr> {
        let after = i32::try_from(after).unwrap_or(i32::MAX);
        Ok(store::events_after(db, id, after)
            .await?
            .into_iter()
            .map(|e| {
                OrderEvent {
                    order_id: e.order_id,
                    user_id: owner.to_owned(),
                    seq: e.seq,
                    status: e.status,
                    message: e.message,
                    at: e.created_at,
                }
                .live()
            })
            .collect())
    }
}
