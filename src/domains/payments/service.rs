//! [`Payments`]: the payments flow of one process, built once by the domain's install
//! step and shared by its routes, its consumer and its jobs: the backends it writes
//! through, the settings and the providers' parsed keys, the signature-check gate. The
//! business operations live here (creating an intent, applying an event; accepting a
//! verified webhook is in [`super::accept`]); routes only parse and answer.

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use super::gate::VerifyGate;
use super::notify::Notify;
use super::settings::{PaymentSettings, ProviderKeys};
use super::store::{self, Applied, NewPayment, Payment};
use crate::broker::Broker;
use crate::domains::flash_sale::messages::publish_events;
use crate::domains::flash_sale::status::OrderStatus;
use crate::domains::flash_sale::store as orders;
use crate::outbox::{OutboxError, Relay};
use crate::platform::Platform;

pub struct Payments {
    pub db: DatabaseConnection,
    pub broker: Arc<dyn Broker>,
    pub relay: Relay,
    pub max_payload: usize,
    pub settings: PaymentSettings,
    /// Parsed once (the start-up check parsed them too): no webhook parses a key.
    pub keys: ProviderKeys,
    /// Signature checks, off the async workers and a few at a time.
    pub gate: VerifyGate,
    /// Where applying an event records what it did (payments' and orders' events).
    pub notify: Notify,
}

/// What a buyer wants to pay for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// A product of `[payments.products]`.
    Product(String),
    /// One of the buyer's unpaid flash-sale orders, for its price.
    Order(String),
}

/// Why an intent was not created.
#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    #[error("unknown product; expected one of {}", known.join(", "))]
    UnknownProduct { known: Vec<String> },
    #[error("no such order of the caller's")]
    NoSuchOrder,
    #[error("the order is {0}, not UNPAID")]
    OrderNotPayable(&'static str),
    #[error("this account already has {0} unpaid payment intents; pay or wait for them to expire")]
    TooManyOpen(u32),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

impl Payments {
    pub fn new(platform: &Platform) -> anyhow::Result<Self> {
        let settings = PaymentSettings::from_settings(&platform.settings)?;
        Ok(Payments {
            db: platform.db.clone(),
            broker: platform.broker.clone(),
            relay: platform.relay.clone(),
            max_payload: platform.settings.broker.max_payload_bytes,
            keys: settings.keys()?,
            notify: Notify::from_settings(platform.events.clone(), &platform.settings)?,
            settings,
            gate: VerifyGate::per_core(),
        })
    }

    /// A payment intent of `user_id` for what it wants, unless it already holds
    /// `open_cap` unpaid ones (0: no cap).
    pub async fn create_intent(
        &self,
        user_id: &str,
        want: Want,
        open_cap: u32,
    ) -> Result<Payment, IntentError> {
        let new = self.what(user_id, want).await?;
        if open_cap == 0 {
            return Ok(store::create(&self.db, user_id, new).await?);
        }
        // Counted and created under the user's row lock: concurrent requests cannot all
        // pass the count.
        let txn = sea_orm::TransactionTrait::begin(&self.db).await?;
        crate::users::lock(&txn, user_id).await?;
        if store::count_open(&txn, user_id).await? >= u64::from(open_cap) {
            return Err(IntentError::TooManyOpen(open_cap));
        }
        let p = store::create(&txn, user_id, new).await?;
        txn.commit().await?;
        Ok(p)
    }

    /// What the intent buys, checked.
    async fn what(&self, user_id: &str, want: Want) -> Result<NewPayment, IntentError> {
        let currency = self.settings.currency.clone();
        match want {
            Want::Product(name) => {
                let Some(product) = self.settings.products.get(&name) else {
                    let known = self.settings.products.keys().cloned().collect();
                    return Err(IntentError::UnknownProduct { known });
                };
                Ok(NewPayment {
                    product: name,
                    credits: product.credits,
                    membership_months: product.membership_months(),
                    plan: product.plan.clone(),
                    order_id: None,
                    amount: product.amount,
                    currency,
                })
            }
            Want::Order(order_id) => {
                let order = orders::get_order(&self.db, &order_id)
                    .await?
                    .filter(|o| o.user_id == user_id)
                    .ok_or(IntentError::NoSuchOrder)?;
                if order.status != OrderStatus::Unpaid {
                    return Err(IntentError::OrderNotPayable(order.status.as_str()));
                }
                Ok(NewPayment {
                    product: "order".into(),
                    credits: 0,
                    membership_months: 0,
                    plan: None,
                    order_id: Some(order.id),
                    amount: order.price,
                    currency,
                })
            }
        }
    }

    /// Applies inbox row `id` (once, whoever calls: the consumer, a redelivery, the
    /// broker-down fallback), then tells what it did: metrics, logs, the order's live
    /// event, the relay (refunds put back in line are in the outbox).
    pub async fn apply(&self, id: i64) -> Result<Applied, OutboxError> {
        let applied = store::apply(&self.db, &self.notify, id, self.max_payload).await?;
        self.tell(&[(id, &applied)]).await;
        Ok(applied)
    }

    /// Applies inbox rows `ids` in one transaction (see [`store::apply_many`]), then
    /// tells what they did as [`Payments::apply`] does, once for the lot.
    pub async fn apply_many(&self, ids: &[i64]) -> Result<Vec<Applied>, OutboxError> {
        let applied = store::apply_many(&self.db, &self.notify, ids, self.max_payload).await?;
        let told: Vec<(i64, &Applied)> = ids.iter().copied().zip(&applied).collect();
        self.tell(&told).await;
        Ok(applied)
    }

    /// After the commit: metrics and logs per event, the orders' live events, one plan
    /// notice if a membership or credits changed, the relay woken once.
    async fn tell(&self, applied: &[(i64, &Applied)]) {
        let mut order_events = Vec::new();
        let (mut announce, mut notify) = (false, false);
        for (id, a) in applied {
            super::metrics::applied(*id, a);
            match a {
                Applied::Granted {
                    order_event,
                    membership_until,
                    ..
                } => {
                    order_events.extend(order_event.iter().cloned());
                    // A membership changes the plan: every instance reads it on the next
                    // request.
                    announce |= membership_until.is_some();
                    notify = true;
                }
                Applied::Refunded { .. } => announce = true,
                Applied::RefundDue { .. } => notify = true,
                _ => {}
            }
        }
        if !order_events.is_empty() {
            publish_events(self.broker.as_ref(), &order_events).await;
        }
        if announce {
            crate::plans::notices::announce(self.broker.as_ref()).await;
        }
        if notify {
            self.relay.notify();
        }
    }
}
