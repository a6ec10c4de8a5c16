//! The alert rules: the queue rules every board sample is read against
//! (`[ops.alerts]`), and the reading of a domain's own conditions.

use std::time::Duration;

use super::panel::Condition;
use super::snapshot::QueueRow;
use crate::ops::settings::AlertSettings;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Rule {
    Backlog,
    OldestMessage,
    SlowConsumption,
    LowSuccess,
}

impl Rule {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Rule::Backlog => "backlog",
            Rule::OldestMessage => "oldest_message",
            Rule::SlowConsumption => "slow_consumption",
            Rule::LowSuccess => "low_success",
        }
    }
}

/// One rule's reading for one queue (or, for a domain's rule, one subject).
pub(super) struct Reading {
    pub(super) rule: &'static str,
    pub(super) on: bool,
    pub(super) value: f64,
    pub(super) threshold: f64,
    pub(super) hold: Duration,
    pub(super) summary: String,
}

pub(super) fn readings(s: &AlertSettings, q: &QueueRow) -> [Reading; 4] {
    let backlog = (q.ready + q.retrying) as f64;
    let backlog_limit = s.backlog_factor * f64::from(q.concurrency.max(1));
    let age = q.oldest_age_secs.unwrap_or(0.0);
    let consumed_ratio = if q.published_per_sec > 0.0 {
        q.consumed_per_sec / q.published_per_sec
    } else {
        1.0
    };
    let finished = q.consumed_per_sec + q.dead_per_sec;
    let success = if finished > 0.0 {
        q.consumed_per_sec / finished
    } else {
        1.0
    };
    let key = &q.queue;
    [
        Reading {
            rule: Rule::Backlog.as_str(),
            on: backlog > backlog_limit,
            value: backlog,
            threshold: backlog_limit,
            hold: Duration::from_secs(s.backlog_for_secs),
            summary: format!(
                "{key}: {backlog} messages waiting, more than {} x the concurrency of its consumers ({})",
                s.backlog_factor, q.concurrency
            ),
        },
        Reading {
            rule: Rule::OldestMessage.as_str(),
            on: age > s.oldest_secs,
            value: age,
            threshold: s.oldest_secs,
            hold: Duration::from_secs(s.oldest_for_secs),
            summary: format!(
                "{key}: its oldest waiting work is {age:.0} s old (limit {} s)",
                s.oldest_secs
            ),
        },
        Reading {
            rule: Rule::SlowConsumption.as_str(),
            on: q.published_per_sec >= s.consume_min_rate && consumed_ratio < s.consume_ratio,
            value: consumed_ratio,
            threshold: s.consume_ratio,
            hold: Duration::from_secs(s.consume_for_secs),
            summary: format!(
                "{key}: consumed {:.1}/s of {:.1}/s published ({:.0} %, limit {:.0} %)",
                q.consumed_per_sec,
                q.published_per_sec,
                consumed_ratio * 100.0,
                s.consume_ratio * 100.0
            ),
        },
        Reading {
            rule: Rule::LowSuccess.as_str(),
            on: finished >= s.success_min_rate && success < s.success_ratio,
            value: success,
            threshold: s.success_ratio,
            hold: Duration::from_secs(s.success_for_secs),
            summary: format!(
                "{key}: {:.1} % of finished messages succeeded (limit {:.0} %)",
                success * 100.0,
                s.success_ratio * 100.0
            ),
        },
    ]
}

/// A domain condition's reading: on (it is listed), held for its `for_secs`.
pub(super) fn domain_reading(c: &Condition) -> Reading {
    Reading {
        rule: c.rule,
        on: true,
        value: c.value,
        threshold: c.threshold,
        hold: Duration::from_secs(c.for_secs),
        summary: c.summary.clone(),
    }
}

/// The reading of a domain rule's subject no longer listed: off.
pub(super) fn cleared(rule: &'static str) -> Reading {
    Reading {
        rule,
        on: false,
        value: 0.0,
        threshold: 0.0,
        hold: Duration::ZERO,
        summary: String::new(),
    }
}
