//! Steps that wait without holding a worker. A provider that takes minutes or hours
//! answers a step with a job id ([`crate::providers::Outcome::Parked`]): the consumer
//! commits the task `WAITING` with a wait row ([`entity::wait`](super::entity::wait))
//! and its first check on a delay queue, and acks. Each check (the `ai.check` queue,
//! handled with the other AI messages) polls the provider and re-parks with the next
//! delay of the backoff, or commits the finished step, or fails it; a provider's
//! callback ([`callbacks`]) wakes the check early. The wait is the truth: the [`sweep`]
//! re-sends checks whose messages were lost, and the deadline of the kind is enforced
//! on the wait itself, not by the broker. A pipeline step may wait the same way for a
//! person's approval ([`approval`], decided over [`decisions`]).

pub mod approval;
pub mod callbacks;
pub mod census;
pub mod decisions;
pub mod store;
pub mod sweep;
