//! Which work runs first. Tenants share a lane (the queue a task waits in) by plan at
//! claim time ([`share`]: each plan's cap, and weights while several wait; the counts
//! besides the tasks table in [`waiting`]); a waiting task tells its place in line
//! ([`line`]); under a heavy backlog of the video-analysis pipeline, submissions of the
//! kinds that give way are shed ([`shedding`]). The lanes' counts are queries of the
//! store ([`crate::domains::ai_tasks::store`]); the rule itself is the plans'
//! ([`crate::plans::share`]).

pub mod line;
pub mod share;
pub mod shedding;
pub mod waiting;
