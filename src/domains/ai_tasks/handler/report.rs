//! What a running step tells its subscribers while it runs, written as task events under
//! the attempt's guard (a fenced attempt writes nothing) through the process's
//! [`ReportWriter`], which commits the reports of every running step together:
//!
//! - progress, at most every [`PROGRESS_EVERY`] (ticks in between coalesced, latest
//!   wins); the first write waits [`FIRST_PROGRESS_AFTER`], so a quick step writes none;
//! - streamed text, as `delta` events at most every `ai.stream_coalesce_ms` (the first piece at
//!   once, the pieces in between joined, none lost), so a fast model does not flood the
//!   database and the bus; a
//!   retried attempt's first piece is preceded by a `reset` event (clients discard what
//!   earlier attempts streamed);
//! - when the step ends, the text not yet written is flushed before the step's own end
//!   is committed, so the deltas of a finished step are all stored and published before
//!   its terminal event.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::beats::Beat;
use super::report_writer::ReportWriter;
use super::{FIRST_PROGRESS_AFTER, PROGRESS_EVERY};
use crate::domains::ai_tasks::messages::EventKind;
use crate::domains::ai_tasks::store::{Piece, ReportWrite};
use crate::providers::Report;

/// The step being reported on.
pub(super) struct Reported<'a> {
    pub id: &'a str,
    pub attempt: i32,
    pub step_index: i32,
    pub step: &'static str,
    pub steps: i32,
    /// Marked at every write: a report refreshes the lease.
    pub beat: &'a Beat,
    /// Minimum spacing of this step's stored text events (`ai.stream_coalesce_ms`).
    pub text_every: Duration,
}

/// Reports until the step ends (`ended`), then flushes its text; ends the step
/// (cancels `ended`) when a write finds the task no longer held by this attempt.
pub(super) async fn report(
    writer: &ReportWriter,
    at: Reported<'_>,
    mut rx: mpsc::UnboundedReceiver<Report>,
    ended: &CancellationToken,
) {
    let mut progress: Option<(i32, Option<String>)> = None;
    let mut next_progress = Instant::now() + FIRST_PROGRESS_AFTER;
    let mut text = String::new();
    let mut text_due: Option<Instant> = None;
    // When the last text was written: the next may go `text_every` after it, so a piece
    // waits at most that long (the first piece of a step goes at once).
    let mut text_written: Option<Instant> = None;
    // A first attempt has nothing to take back.
    let mut reset_due = at.attempt > 1;
    loop {
        let progress_due = progress.as_ref().map(|_| next_progress);
        let due = match (progress_due, text_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        tokio::select! {
            got = rx.recv() => match got {
                Some(Report::Progress(pct, message)) => progress = Some((pct, message)),
                Some(Report::Text(piece)) => {
                    text.push_str(&piece);
                    text_due.get_or_insert_with(|| {
                        let now = Instant::now();
                        text_written.map_or(now, |w| (w + at.text_every).max(now))
                    });
                }
                None => break,
            },
            _ = sleep_until(due), if due.is_some() => {
                let now = Instant::now();
                if text_due.is_some_and(|d| d <= now) {
                    text_written = Some(now);
                    if !write_text(writer, &at, &mut reset_due, std::mem::take(&mut text)).await {
                        // Canceled or re-driven: the step stops too.
                        ended.cancel();
                        return;
                    }
                    text_due = None;
                }
                if progress.is_some() && next_progress <= now {
                    next_progress = now + PROGRESS_EVERY;
                    if let Some((pct, message)) = progress.take()
                        && !write_progress(writer, &at, pct, message).await
                    {
                        ended.cancel();
                        return;
                    }
                }
            }
            _ = ended.cancelled() => break,
        }
    }
    // The step ended: its last pieces of text, before its end is committed.
    while let Ok(got) = rx.try_recv() {
        if let Report::Text(piece) = got {
            text.push_str(&piece);
        }
    }
    if !text.is_empty() {
        write_text(writer, &at, &mut reset_due, text).await;
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Writes reports through the process's writer; `false` when the attempt no longer
/// holds the step (nothing more to report).
async fn write(writer: &ReportWriter, at: &Reported<'_>, pieces: Vec<Piece>) -> bool {
    let write = ReportWrite {
        id: at.id.to_owned(),
        attempt: at.attempt,
        step_index: at.step_index,
        pieces,
    };
    match writer.write(write).await {
        Ok(held) => {
            if held {
                at.beat.mark();
            }
            held
        }
        // A database hiccup loses these events from the stream (the result keeps the
        // whole text; the next progress supersedes this one), not the step.
        Err(e) => {
            tracing::warn!(task_id = %at.id, error = %e, "writing task events");
            true
        }
    }
}

async fn write_progress(
    writer: &ReportWriter,
    at: &Reported<'_>,
    pct: i32,
    message: Option<String>,
) -> bool {
    let progress = Piece::Progress {
        progress: ((at.step_index * 100 + pct) / at.steps).min(99),
        step: at.step.to_owned(),
        message,
    };
    write(writer, at, vec![progress]).await
}

/// Writes the pieces streamed since the last write, a `reset` first when a retried
/// attempt starts streaming.
async fn write_text(
    writer: &ReportWriter,
    at: &Reported<'_>,
    reset_due: &mut bool,
    text: String,
) -> bool {
    let mut pieces = Vec::with_capacity(2);
    if std::mem::take(reset_due) {
        pieces.push(Piece::Text(EventKind::Reset, String::new()));
    }
    pieces.push(Piece::Text(EventKind::Delta, text));
    write(writer, at, pieces).await
}
