//! `material.created` webhook events: built here, recorded by whoever creates the
//! materials, in its transaction (a batch of finished tasks records them together with
//! the tasks' own events, one lookup of endpoints for both). Built only for the tenants
//! of `listeners` that want them.

use super::store::Material;
use super::view::MaterialView;
use crate::domains::webhooks::emit::{Event, Listeners};

pub fn created(listeners: &Listeners, rows: &[Material]) -> Vec<Event> {
    rows.iter()
        .filter(|m| listeners.wants(&m.user_id, "material.created"))
        .map(|m| Event {
            user_id: m.user_id.clone(),
            event_type: "material.created",
            data: serde_json::to_value(MaterialView::from(m.clone())).unwrap_or_default(),
        })
        .collect()
}
