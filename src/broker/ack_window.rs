//! The settle side of one RabbitMQ consumer channel: every ack and nack of the channel's
//! deliveries goes through one task, which sends one `basic.ack` with `multiple` for a
//! run of acks when it is safe, and single frames otherwise.
//!
//! `multiple` acknowledges *every* unacked delivery up to the tag, so it is only sent
//! when each delivered tag up to it is either in the run being acked or already settled
//! by a frame this task sent earlier. A message still being handled (a slow task, a
//! neighbour's retry) below the run keeps the run's acks single: acks are never held back
//! waiting for it, since an unacked delivery occupies a prefetch slot and counts toward
//! the broker's consumer timeout. One task per channel also keeps the frames in the order
//! they were decided, so a multiple ack can never overtake the nack of a tag it spans.

use std::collections::{BTreeMap, BTreeSet};

use lapin::Channel;
use lapin::options::{BasicAckOptions, BasicNackOptions};
use tokio::sync::{mpsc, oneshot};

type Reply = oneshot::Sender<Result<(), String>>;

enum Command {
    Delivered(u64),
    Ack(u64, Reply),
    Nack(u64, Reply),
}

/// A handle to the settle task of one channel; cheap to clone.
#[derive(Clone)]
pub(crate) struct AckWindow {
    tx: mpsc::UnboundedSender<Command>,
}

impl AckWindow {
    /// Starts the settle task of `channel`; it ends when every handle is dropped.
    pub(crate) fn start(channel: Channel) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(channel, rx));
        AckWindow { tx }
    }

    /// Records a delivery as handed out; call before anyone can settle it.
    pub(crate) fn delivered(&self, tag: u64) {
        let _ = self.tx.send(Command::Delivered(tag));
    }

    /// Acks `tag`; returns once the frame that covers it was sent.
    pub(crate) async fn ack(&self, tag: u64) -> Result<(), String> {
        self.ask(|r| Command::Ack(tag, r)).await
    }

    /// Nacks `tag` with requeue; returns once the frame was sent.
    pub(crate) async fn nack(&self, tag: u64) -> Result<(), String> {
        self.ask(|r| Command::Nack(tag, r)).await
    }

    async fn ask(&self, command: impl FnOnce(Reply) -> Command) -> Result<(), String> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(command(reply))
            .map_err(|_| "the channel's settle task ended".to_owned())?;
        answer
            .await
            .map_err(|_| "the channel's settle task ended".to_owned())?
    }
}

/// What the task knows of the channel's deliveries.
#[derive(Default)]
struct Window {
    /// Delivered and not yet settled by a sent frame.
    unsettled: BTreeSet<u64>,
    /// Acks asked for and not yet sent.
    acks: BTreeMap<u64, Reply>,
    nacks: Vec<(u64, Reply)>,
}

/// One frame to send and who waits for it.
struct Frame {
    tag: u64,
    multiple: bool,
    ack: bool,
    replies: Vec<Reply>,
}

impl Window {
    fn take(&mut self, command: Command) {
        match command {
            Command::Delivered(tag) => {
                self.unsettled.insert(tag);
            }
            Command::Ack(tag, reply) => {
                self.acks.insert(tag, reply);
            }
            Command::Nack(tag, reply) => self.nacks.push((tag, reply)),
        }
    }

    /// The frames for everything asked so far, in sending order: nacks first (single),
    /// then one multiple ack for the acks below the lowest delivery nobody asked to
    /// settle, then single acks for the rest.
    fn frames(&mut self) -> Vec<Frame> {
        let mut frames = Vec::new();
        for (tag, reply) in self.nacks.drain(..) {
            self.unsettled.remove(&tag);
            frames.push(Frame {
                tag,
                multiple: false,
                ack: false,
                replies: vec![reply],
            });
        }
        // The lowest tag that is delivered, unsettled and not being acked now.
        let low = self
            .unsettled
            .iter()
            .find(|t| !self.acks.contains_key(t))
            .copied()
            .unwrap_or(u64::MAX);
        let above = self.acks.split_off(&low);
        let below = std::mem::replace(&mut self.acks, above);
        if let Some(&top) = below.keys().next_back() {
            for tag in below.keys() {
                self.unsettled.remove(tag);
            }
            frames.push(Frame {
                tag: top,
                multiple: below.len() > 1,
                ack: true,
                replies: below.into_values().collect(),
            });
        }
        for (tag, reply) in std::mem::take(&mut self.acks) {
            self.unsettled.remove(&tag);
            frames.push(Frame {
                tag,
                multiple: false,
                ack: true,
                replies: vec![reply],
            });
        }
        frames
    }
}

async fn run(channel: Channel, mut rx: mpsc::UnboundedReceiver<Command>) {
    let mut window = Window::default();
    let mut buf = Vec::with_capacity(256);
    while rx.recv_many(&mut buf, 1024).await > 0 {
        for command in buf.drain(..) {
            window.take(command);
        }
        for frame in window.frames() {
            let sent = if frame.ack {
                channel
                    .basic_ack(
                        frame.tag,
                        BasicAckOptions {
                            multiple: frame.multiple,
                        },
                    )
                    .await
            } else {
                channel
                    .basic_nack(
                        frame.tag,
                        BasicNackOptions {
                            multiple: false,
                            requeue: true,
                        },
                    )
                    .await
            }
            .map_err(|e| e.to_string());
            if frame.multiple {
                metrics::counter!("conveyor_acks_coalesced_total")
                    .increment(frame.replies.len() as u64);
            }
            for reply in frame.replies {
                let _ = reply.send(sent.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(delivered: &[u64]) -> Window {
        let mut w = Window::default();
        for &t in delivered {
            w.take(Command::Delivered(t));
        }
        w
    }

    fn ack(w: &mut Window, tag: u64) {
        w.take(Command::Ack(tag, oneshot::channel().0));
    }

    fn shape(frames: &[Frame]) -> Vec<(u64, bool, bool)> {
        frames.iter().map(|f| (f.tag, f.multiple, f.ack)).collect()
    }

    #[test]
    fn a_contiguous_run_from_the_bottom_is_one_multiple_ack() {
        let mut w = window(&[1, 2, 3, 4, 5]);
        for t in [3, 1, 2] {
            ack(&mut w, t);
        }
        assert_eq!(shape(&w.frames()), vec![(3, true, true)]);
        assert_eq!(w.unsettled.iter().copied().collect::<Vec<_>>(), vec![4, 5]);
    }

    #[test]
    fn acks_above_an_unsettled_delivery_stay_single() {
        let mut w = window(&[1, 2, 3, 4]);
        for t in [2, 3, 4] {
            ack(&mut w, t);
        }
        // 1 is still being handled: a multiple ack at 4 would settle it too.
        assert_eq!(
            shape(&w.frames()),
            vec![(2, false, true), (3, false, true), (4, false, true)]
        );
        ack(&mut w, 1);
        assert_eq!(shape(&w.frames()), vec![(1, false, true)]);
        assert!(w.unsettled.is_empty());
    }

    #[test]
    fn a_nack_is_sent_before_a_multiple_ack_that_spans_it() {
        let mut w = window(&[1, 2, 3]);
        ack(&mut w, 1);
        w.take(Command::Nack(2, oneshot::channel().0));
        ack(&mut w, 3);
        assert_eq!(shape(&w.frames()), vec![(2, false, false), (3, true, true)]);
    }

    #[test]
    fn tags_settled_earlier_do_not_block_a_run() {
        let mut w = window(&[1, 2, 3, 4]);
        ack(&mut w, 1);
        assert_eq!(shape(&w.frames()), vec![(1, false, true)]);
        ack(&mut w, 2);
        ack(&mut w, 3);
        assert_eq!(shape(&w.frames()), vec![(3, true, true)]);
    }
}
