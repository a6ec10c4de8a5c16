//! The flash-sale flow's queues (consumer group `orders`) and its one business timer.

use std::time::Duration;

use crate::broker::{DelaySpec, QueueSpec};

pub const ORDERS_CREATE: QueueSpec = QueueSpec {
    key: "orders.create",
    group: "orders",
    default_prefetch: 64,
    default_max_attempts: 5,
    default_batch: 1,
    default_linger_ms: 0,
    default_in_flight: None,
    purpose: "flash-sale order rows written after the Redis stock check",
};

pub const ORDERS_EXPIRE: QueueSpec = QueueSpec {
    key: "orders.expire",
    group: "orders",
    default_prefetch: 64,
    default_max_attempts: 5,
    default_batch: 1,
    default_linger_ms: 0,
    default_in_flight: None,
    purpose: "cancel unpaid orders and return their stock",
};

/// 30 minutes unless `[queues."orders.payment-timeout"] delay_ms` says otherwise (tests
/// use seconds); the queue's name carries the delay, so a changed delay is a new queue.
pub const ORDER_PAYMENT_TIMEOUT: DelaySpec = DelaySpec {
    key: "orders.payment-timeout",
    delay: Duration::from_secs(30 * 60),
    target: &ORDERS_EXPIRE,
    purpose: "unpaid-order cancel",
};

pub const QUEUES: &[&QueueSpec] = &[&ORDERS_CREATE, &ORDERS_EXPIRE];
pub const DELAYS: &[&DelaySpec] = &[&ORDER_PAYMENT_TIMEOUT];
