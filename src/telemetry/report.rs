//! What a process tells the API instances every few seconds about its queues: which it
//! consumes and with what prefetch, and its [`tally`](crate::tally) totals. Published on
//! the bus topic [`REPORTS`] by `ops::reporter`; the ops board turns the totals of every live
//! process into per-queue rates, consumer counts and concurrency.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::bus::Topic;
use crate::tally::{Tally, What};

/// The topic process reports travel on.
pub const REPORTS: Topic<ProcessReport> = Topic::new("reports", 256);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessReport {
    /// Unique per process run (host, pid, start time): a restarted process is a new one.
    pub process: String,
    pub at: DateTime<Utc>,
    pub queues: Vec<QueueReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueReport {
    /// The queue's key (`ai.short`).
    pub queue: String,
    /// The prefetch this process consumes the queue with; 0: it does not consume it.
    pub prefetch: u16,
    /// Totals since the process started.
    pub processed: u64,
    pub dead: u64,
    pub published: u64,
}

impl ProcessReport {
    /// The report now: every queue `tally` knows a consumer or a total of.
    pub fn now(process: &str, tally: &Tally) -> Self {
        let totals = tally.totals();
        let mut queues: Vec<QueueReport> = tally
            .consumed()
            .iter()
            .map(|(key, prefetch)| QueueReport {
                queue: (*key).to_owned(),
                prefetch: *prefetch,
                processed: 0,
                dead: 0,
                published: 0,
            })
            .collect();
        for ((key, what), n) in totals {
            let i = match queues.iter().position(|q| q.queue == key) {
                Some(i) => i,
                None => {
                    queues.push(QueueReport {
                        queue: key.to_owned(),
                        prefetch: 0,
                        processed: 0,
                        dead: 0,
                        published: 0,
                    });
                    queues.len() - 1
                }
            };
            let q = &mut queues[i];
            match what {
                What::Processed => q.processed = n,
                What::Dead => q.dead = n,
                What::Published => q.published = n,
            }
        }
        ProcessReport {
            process: process.to_owned(),
            at: Utc::now(),
            queues,
        }
    }
}
