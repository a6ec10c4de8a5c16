use super::*;
use crate::domains::ai_tasks::entity::task;
use crate::domains::ai_tasks::kinds::{Status, TaskKind};
use chrono::Utc;

fn task(kind: TaskKind, status: Status, step_index: i32, leased: bool, started: bool) -> Task {
    let now = Utc::now();
    task::Model {
        id: "t".into(),
        user_id: "u".into(),
        kind,
        prompt: "p".into(),
        params: "{}".into(),
        status,
        attempt: 1,
        step_index,
        step: None,
        progress: 0,
        seq: 1,
        cost: 10,
        result: None,
        error: None,
        heartbeat_at: leased.then_some(now),
        created_at: now,
        updated_at: now,
        started_at: started.then_some(now),
        finished_at: None,
        retry_of: None,
        metadata: None,
        tenant_id: "u".into(),
        plan: "free".into(),
        lane: "ai.short".into(),
        trace_id: None,
    }
}

#[test]
fn the_cancel_refund_follows_the_policy() {
    use Status::*;
    use TaskKind::{Image, VideoAnalysis};
    // Never started: everything back.
    assert_eq!(
        cancel_refund(&task(Image, Pending, 0, false, false), 50, false),
        10
    );
    // Running its only step: the percent of it.
    assert_eq!(
        cancel_refund(&task(Image, Processing, 0, true, true), 50, false),
        5
    );
    assert_eq!(
        cancel_refund(&task(Image, Processing, 0, true, true), 0, false),
        0
    );
    // A 4-step pipeline running step 0: 3 steps + half of one, of 4 (10 × 3.5 / 4 = 8.75).
    assert_eq!(
        cancel_refund(&task(VideoAnalysis, Processing, 0, true, true), 50, false),
        8
    );
    // Between steps (step 1 done, step 2 not claimed: no lease): steps 2 and 3 back.
    assert_eq!(
        cancel_refund(&task(VideoAnalysis, Processing, 2, false, true), 50, false),
        5
    );
    // Waiting to retry step 1 (lease released): steps 1-3 back, nothing for the failure.
    assert_eq!(
        cancel_refund(&task(VideoAnalysis, Retrying, 1, false, true), 50, false),
        7
    );
    // A job parked at its provider runs there: the percent of it, as on a worker.
    assert_eq!(
        cancel_refund(&task(Image, Waiting, 0, false, true), 50, true),
        5
    );
    // Waiting for an approval before step 2: steps 2 and 3 back.
    assert_eq!(
        cancel_refund(&task(VideoAnalysis, Waiting, 2, false, true), 50, false),
        5
    );
}
