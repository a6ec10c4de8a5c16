//! Search sync on the event seam (`crate::events`): it declares `material.created`, and
//! its [`Materials`] listener makes a material of every successful task's output
//! (`task.output`, recorded by AI tasks with the task's last step), in the task's
//! transaction: the row and its `search.sync` message commit with the task's success or
//! not at all. The material's own event is recorded in turn, with its view built only
//! for a tenant a listener wants it for (an endpoint subscribed to it).

use crate::domains::ai_tasks::events::{OUTPUT, Output};
use crate::events::{Event, EventError, EventType, Listener, Then, Txn, Wants};

use super::store::{self, NewMaterial};
use super::view::MaterialView;

pub const MATERIAL_CREATED: EventType = EventType::new(
    "material.created",
    "a material was made of a successful task's output",
);

/// The event types search sync records.
pub const EVENTS: &[&EventType] = &[&MATERIAL_CREATED];

/// Makes a material of every task output it hears.
pub struct Materials;

/// Every tenant's task outputs: nothing to look up.
pub struct Outputs;

impl Wants for Outputs {
    fn wants(&self, _: &str, kind: &EventType) -> bool {
        *kind == OUTPUT
    }

    fn is_empty(&self) -> bool {
        false
    }

    fn merge(&mut self, _: Self) {}
}

#[async_trait::async_trait]
impl Listener for Materials {
    type Wants = Outputs;

    fn name(&self) -> &'static str {
        "search_sync"
    }

    async fn interest(&self, _: &Txn<'_>, _: &[&str]) -> Result<Outputs, EventError> {
        Ok(Outputs)
    }

    async fn hear(
        &self,
        txn: &Txn<'_>,
        _: &Outputs,
        events: &[&Event],
        then: &mut Then<'_>,
    ) -> Result<(), EventError> {
        let new: Vec<NewMaterial> = events
            .iter()
            .filter_map(|e| {
                let o = e.detail::<Output>()?;
                Some(NewMaterial {
                    user_id: e.user_id.clone(),
                    task_id: o.task_id.clone(),
                    kind: o.kind.clone(),
                    title: o.prompt.clone(),
                    content: o.content.clone(),
                    vectors: o.vectors.clone(),
                })
            })
            .collect();
        let created = store::create_many(txn, new)
            .await
            .map_err(|e| EventError::Listener {
                listener: "search_sync",
                message: e.to_string(),
            })?;
        for m in created {
            if then.wants(&m.user_id, &MATERIAL_CREATED) {
                let user = m.user_id.clone();
                let data = serde_json::to_value(MaterialView::from(m)).unwrap_or_default();
                then.record(Event::new(user, &MATERIAL_CREATED, data));
            }
        }
        Ok(())
    }
}
