//! Business domains. Each is one folder holding its messages, HTTP routes, message
//! handler and store, close together. This file registers their handlers with the
//! queues they consume.

use std::sync::Arc;

use crate::app::Platform;
use crate::broker::QueueSpec;
use crate::consumer::Handler;

/// (queue, handler) for every domain consumer; `serve` (embedded) and `consume <group>`
/// run these. Queues without a handler are declared but not consumed.
pub fn handlers(_platform: &Platform) -> Vec<(&'static QueueSpec, Arc<dyn Handler>)> {
    Vec::new()
}
