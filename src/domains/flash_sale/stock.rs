//! The stock gate: per sale, the units left, what each buyer took, and the sale's window,
//! kept in the dedupe store's Redis and changed only by Lua scripts that check every
//! condition before they write anything (a script cannot be rolled back). The embedded
//! backend keeps the same state in a mutex-guarded map with the same semantics.
//!
//! Keys (hash-tagged by sale, so a Redis Cluster keeps a sale's keys together):
//! `<prefix>:fs:{<sale>}:stock` (units left), `:bought` (hash user → units),
//! `:meta` (hash: limit, starts, ends, in epoch ms), `:orders` (set of order ids a unit
//! was taken for: the same order id never takes twice, which makes a retried
//! `Idempotency-Key` safe), `:returned` (set of order ids whose unit came back: a second
//! give-back of the same order changes nothing).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use async_trait::async_trait;
use redis::aio::ConnectionManager;

/// What the intake script decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// One unit is the buyer's; `remaining` are left.
    Taken {
        remaining: i64,
    },
    SoldOut,
    LimitReached,
    /// Before the start or after the end.
    NotActive,
    /// The sale is not loaded into the store (warm it).
    NotLoaded,
    /// A unit was taken for this order id before.
    Duplicate,
}

/// A sale as loaded into the store.
#[derive(Debug, Clone)]
pub struct Warm {
    pub sale_id: String,
    pub remaining: i64,
    pub limit: i64,
    pub starts_ms: i64,
    pub ends_ms: i64,
    /// Units each buyer holds in live orders.
    pub bought: Vec<(String, i64)>,
}

#[derive(Debug, thiserror::Error)]
#[error("stock store unavailable: {0}")]
pub struct StockError(pub String);

#[async_trait]
pub trait StockStore: Send + Sync + 'static {
    /// Loads a sale unless it is loaded already (then nothing changes: units taken since
    /// are never counted twice); true when it loaded now.
    async fn warm(&self, sale: &Warm) -> Result<bool, StockError>;
    /// Takes one unit for order `order_id` of `user_id` if the order took none yet, the
    /// sale is active at `now_ms`, has stock, and the user is under the limit; otherwise
    /// writes nothing.
    async fn take(
        &self,
        sale_id: &str,
        user_id: &str,
        order_id: &str,
        now_ms: i64,
    ) -> Result<Take, StockError>;
    /// Gives order `order_id`'s unit and the buyer's slot back, once per order; true when
    /// it did now.
    async fn give_back(
        &self,
        sale_id: &str,
        user_id: &str,
        order_id: &str,
    ) -> Result<bool, StockError>;
    /// Whether order `order_id`'s unit was given back.
    async fn is_returned(&self, sale_id: &str, order_id: &str) -> Result<bool, StockError>;
    /// Units left, if the sale is loaded.
    async fn remaining(&self, sale_id: &str) -> Result<Option<i64>, StockError>;
    /// Sets the units left (reconciliation's repair).
    async fn set_remaining(&self, sale_id: &str, remaining: i64) -> Result<(), StockError>;
}

const WARM: &str = r"
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[3], 'limit', ARGV[2], 'starts', ARGV[3], 'ends', ARGV[4])
return 1
";

/// -5 duplicate order, -3 not loaded, -4 not active, -1 sold out, -2 limit reached,
/// else units left.
const TAKE: &str = r"
if redis.call('SISMEMBER', KEYS[4], ARGV[3]) == 1 then return -5 end
local meta = redis.call('HMGET', KEYS[3], 'limit', 'starts', 'ends')
if not meta[1] then return -3 end
local now = tonumber(ARGV[2])
if now < tonumber(meta[2]) or now >= tonumber(meta[3]) then return -4 end
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
if stock <= 0 then return -1 end
local bought = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if bought >= tonumber(meta[1]) then return -2 end
redis.call('DECR', KEYS[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('SADD', KEYS[4], ARGV[3])
return stock - 1
";

const GIVE_BACK: &str = r"
if redis.call('SADD', KEYS[3], ARGV[2]) == 0 then return 0 end
redis.call('INCR', KEYS[1])
if redis.call('HINCRBY', KEYS[2], ARGV[1], -1) < 0 then redis.call('HSET', KEYS[2], ARGV[1], 0) end
return 1
";

pub struct RedisStock {
    conn: ConnectionManager,
    prefix: String,
    warm: redis::Script,
    take: redis::Script,
    give_back: redis::Script,
}

fn unavailable(e: redis::RedisError) -> StockError {
    StockError(e.to_string())
}

impl RedisStock {
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, StockError> {
        let conn = crate::redis_conn::connection(url)
            .await
            .map_err(StockError)?;
        Ok(RedisStock {
            conn,
            prefix: format!("{prefix}:fs:"),
            // Loaded once per connection and called by SHA; `Script` reloads on NOSCRIPT.
            warm: redis::Script::new(WARM),
            take: redis::Script::new(TAKE),
            give_back: redis::Script::new(GIVE_BACK),
        })
    }

    fn key(&self, sale_id: &str, part: &str) -> String {
        format!("{}{{{sale_id}}}:{part}", self.prefix)
    }
}

#[async_trait]
impl StockStore for RedisStock {
    async fn warm(&self, sale: &Warm) -> Result<bool, StockError> {
        let id = &sale.sale_id;
        let mut call = self.warm.prepare_invoke();
        call.key(self.key(id, "stock"))
            .key(self.key(id, "bought"))
            .key(self.key(id, "meta"))
            .arg(sale.remaining)
            .arg(sale.limit)
            .arg(sale.starts_ms)
            .arg(sale.ends_ms);
        for (user, n) in &sale.bought {
            call.arg(user).arg(*n);
        }
        let loaded: i64 = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(unavailable)?;
        Ok(loaded == 1)
    }

    async fn take(
        &self,
        sale_id: &str,
        user_id: &str,
        order_id: &str,
        now_ms: i64,
    ) -> Result<Take, StockError> {
        let r: i64 = self
            .take
            .key(self.key(sale_id, "stock"))
            .key(self.key(sale_id, "bought"))
            .key(self.key(sale_id, "meta"))
            .key(self.key(sale_id, "orders"))
            .arg(user_id)
            .arg(now_ms)
            .arg(order_id)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(unavailable)?;
        Ok(match r {
            -1 => Take::SoldOut,
            -2 => Take::LimitReached,
            -3 => Take::NotLoaded,
            -4 => Take::NotActive,
            -5 => Take::Duplicate,
            remaining => Take::Taken { remaining },
        })
    }

    async fn give_back(
        &self,
        sale_id: &str,
        user_id: &str,
        order_id: &str,
    ) -> Result<bool, StockError> {
        let r: i64 = self
            .give_back
            .key(self.key(sale_id, "stock"))
            .key(self.key(sale_id, "bought"))
            .key(self.key(sale_id, "returned"))
            .arg(user_id)
            .arg(order_id)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(unavailable)?;
        Ok(r == 1)
    }

    async fn is_returned(&self, sale_id: &str, order_id: &str) -> Result<bool, StockError> {
        redis::cmd("SISMEMBER")
            .arg(self.key(sale_id, "returned"))
            .arg(order_id)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(unavailable)
    }

    async fn remaining(&self, sale_id: &str) -> Result<Option<i64>, StockError> {
        redis::cmd("GET")
            .arg(self.key(sale_id, "stock"))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(unavailable)
    }

    async fn set_remaining(&self, sale_id: &str, remaining: i64) -> Result<(), StockError> {
        redis::cmd("SET")
            .arg(self.key(sale_id, "stock"))
            .arg(remaining)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(unavailable)
    }
}

/// The same state in process, for the embedded backends.
#[derive(Default)]
pub struct EmbeddedStock {
    sales: Mutex<HashMap<String, SaleState>>,
}

struct SaleState {
    remaining: i64,
    limit: i64,
    starts_ms: i64,
    ends_ms: i64,
    bought: HashMap<String, i64>,
    orders: HashSet<String>,
    returned: HashSet<String>,
}

fn poisoned<T>(_: T) -> StockError {
    StockError("embedded stock lock poisoned".into())
}

#[async_trait]
impl StockStore for EmbeddedStock {
    async fn warm(&self, sale: &Warm) -> Result<bool, StockError> {
        let mut sales = self.sales.lock().map_err(poisoned)?;
        if sales.contains_key(&sale.sale_id) {
            return Ok(false);
        }
        sales.insert(
            sale.sale_id.clone(),
            SaleState {
                remaining: sale.remaining,
                limit: sale.limit,
                starts_ms: sale.starts_ms,
                ends_ms: sale.ends_ms,
                bought: sale.bought.iter().cloned().collect(),
                orders: HashSet::new(),
                returned: HashSet::new(),
            },
        );
        Ok(true)
    }

    async fn take(
        &self,
        sale_id: &str,
        user_id: &str,
        order_id: &str,
        now_ms: i64,
    ) -> Result<Take, StockError> {
        let mut sales = self.sales.lock().map_err(poisoned)?;
        let Some(s) = sales.get_mut(sale_id) else {
            return Ok(Take::NotLoaded);
        };
        if s.orders.contains(order_id) {
            return Ok(Take::Duplicate);
        }
        if now_ms < s.starts_ms || now_ms >= s.ends_ms {
            return Ok(Take::NotActive);
        }
        if s.remaining <= 0 {
            return Ok(Take::SoldOut);
        }
        let bought = s.bought.entry(user_id.to_owned()).or_default();
        if *bought >= s.limit {
            return Ok(Take::LimitReached);
        }
        *bought += 1;
        s.remaining -= 1;
        s.orders.insert(order_id.to_owned());
        Ok(Take::Taken {
            remaining: s.remaining,
        })
    }

    async fn give_back(
        &self,
        sale_id: &str,
        user_id: &str,
        order_id: &str,
    ) -> Result<bool, StockError> {
        let mut sales = self.sales.lock().map_err(poisoned)?;
        let Some(s) = sales.get_mut(sale_id) else {
            return Ok(false);
        };
        if !s.returned.insert(order_id.to_owned()) {
            return Ok(false);
        }
        s.remaining += 1;
        if let Some(b) = s.bought.get_mut(user_id) {
            *b = (*b - 1).max(0);
        }
        Ok(true)
    }

    async fn is_returned(&self, sale_id: &str, order_id: &str) -> Result<bool, StockError> {
        let sales = self.sales.lock().map_err(poisoned)?;
        Ok(sales
            .get(sale_id)
            .is_some_and(|s| s.returned.contains(order_id)))
    }

    async fn remaining(&self, sale_id: &str) -> Result<Option<i64>, StockError> {
        let sales = self.sales.lock().map_err(poisoned)?;
        Ok(sales.get(sale_id).map(|s| s.remaining))
    }

    async fn set_remaining(&self, sale_id: &str, remaining: i64) -> Result<(), StockError> {
        let mut sales = self.sales.lock().map_err(poisoned)?;
        if let Some(s) = sales.get_mut(sale_id) {
            s.remaining = remaining;
        }
        Ok(())
    }
}
