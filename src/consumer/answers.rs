//! Where a batch handler gives its answers as soon as each is known, so the runtime
//! settles (fences, acks, retries) a message while its neighbours are still running: a
//! quick step's prefetch slot is free at once, not when the batch's slowest step ends.

use std::sync::Mutex;

use tokio::sync::mpsc;

use super::{BatchHandler, Context, HandlerError};
use crate::broker::Envelope;

/// One message's answer: its index in the batch and its result.
pub type Answer = (usize, Result<(), HandlerError>);

/// The answer sink of one batch-handler call. Each message is answered once; a second
/// answer for the same index, or an index outside the batch, is ignored with a warning.
pub struct Answers {
    tx: mpsc::UnboundedSender<Answer>,
    given: Mutex<Vec<bool>>,
}

impl Answers {
    /// A sink for `n` messages, and the receiver the answers arrive on.
    pub fn new(n: usize) -> (Self, mpsc::UnboundedReceiver<Answer>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let given = Mutex::new(vec![false; n]);
        (Answers { tx, given }, rx)
    }

    /// Answers message `index`.
    pub fn give(&self, index: usize, result: Result<(), HandlerError>) {
        let fresh = {
            let mut given = self.given.lock().unwrap_or_else(|p| p.into_inner());
            match given.get_mut(index) {
                Some(g) if !*g => {
                    *g = true;
                    true
                }
                _ => false,
            }
        };
        if fresh {
            // The receiver lives as long as the call; after it, nobody listens.
            let _ = self.tx.send((index, result));
        } else {
            tracing::warn!(
                index,
                "batch handler answered a message twice or out of range; ignored"
            );
        }
    }

    /// Answers every message not answered yet with `result()` (a failure of what
    /// remains of the batch, say).
    pub fn give_rest(&self, result: impl Fn() -> Result<(), HandlerError>) {
        let rest: Vec<usize> = {
            let given = self.given.lock().unwrap_or_else(|p| p.into_inner());
            given
                .iter()
                .enumerate()
                .filter(|(_, g)| !**g)
                .map(|(i, _)| i)
                .collect()
        };
        for i in rest {
            self.give(i, result());
        }
    }

    /// Drains what was given so far, in the order given.
    pub(super) fn drain(rx: &mut mpsc::UnboundedReceiver<Answer>) -> Vec<Answer> {
        let mut out = Vec::new();
        while let Ok(a) = rx.try_recv() {
            out.push(a);
        }
        out
    }
}

/// Runs `handler`'s streaming call on `messages` and returns its answers in order, for
/// callers that want them all at once; a message left unanswered gets `None`.
pub async fn collect(
    handler: &(impl BatchHandler + ?Sized),
    ctx: &Context,
    messages: &[Envelope],
) -> Vec<Option<Result<(), HandlerError>>> {
    let (answers, mut rx) = Answers::new(messages.len());
    handler.handle_streaming(ctx, messages, &answers).await;
    let mut out: Vec<Option<Result<(), HandlerError>>> = messages.iter().map(|_| None).collect();
    for (i, r) in Answers::drain(&mut rx) {
        out[i] = Some(r);
    }
    out
}
