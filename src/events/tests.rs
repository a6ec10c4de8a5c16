//! The seam on an in-memory SQLite database: a listener hears only what it wants, once
//! per recording it is asked once about the tenants, events a listener records in turn
//! are heard in the same transaction, a loop is stopped, a name declared twice is
//! refused, and a domain installed again replaces only its own entry.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::*;

const DONE: EventType = EventType::new("thing.done", "a thing was done");
const ECHO: EventType = EventType::new("thing.echoed", "a thing done was echoed");
const INNER: EventType = EventType::internal("thing.inner", "what only listeners read");

/// The tenants it listens for, and what it heard.
#[derive(Default)]
struct Log {
    for_users: Vec<&'static str>,
    asked: AtomicUsize,
    heard: Mutex<Vec<String>>,
    /// Echo every `thing.done` as `thing.echoed` (in turn).
    echo: bool,
    /// Echo every echo too: a loop.
    echo_echoes: bool,
}

struct Tenants(Vec<String>);

impl Wants for Tenants {
    fn wants(&self, user: &str, _: &EventType) -> bool {
        self.0.iter().any(|u| u == user)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn merge(&mut self, more: Self) {
        self.0.extend(more.0);
    }
}

#[async_trait::async_trait]
impl Listener for std::sync::Arc<Log> {
    type Wants = Tenants;

    fn name(&self) -> &'static str {
        "log"
    }

    async fn interest(&self, _: &Txn<'_>, users: &[&str]) -> Result<Tenants, EventError> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        let mine = users.iter().filter(|u| self.for_users.contains(u));
        Ok(Tenants(mine.map(|u| (*u).to_owned()).collect()))
    }

    async fn hear(
        &self,
        _: &Txn<'_>,
        _: &Tenants,
        events: &[&Event],
        then: &mut Then<'_>,
    ) -> Result<(), EventError> {
        for e in events {
            let detail = e
                .detail::<u32>()
                .map(|d| format!("+{d}"))
                .unwrap_or_default();
            let line = format!("{}:{}{detail}", e.user_id, e.kind.name);
            self.heard.lock().unwrap().push(line);
            let echo = (self.echo && *e.kind == DONE) || self.echo_echoes;
            if echo && then.wants(&e.user_id, &ECHO) {
                then.record(Event::new(e.user_id.clone(), &ECHO, json!({})));
            }
        }
        Ok(())
    }
}

async fn db() -> sea_orm::DatabaseConnection {
    crate::db::connect_url("sqlite::memory:", 1).await.unwrap()
}

fn seam(logs: &[&std::sync::Arc<Log>]) -> Events {
    let events = Events::default();
    let listeners = logs
        .iter()
        .map(|l| AnyListener::new((*l).clone()))
        .collect();
    events
        .register("things", &[&DONE, &ECHO, &INNER], listeners)
        .unwrap();
    events
}

fn heard(log: &Log) -> Vec<String> {
    log.heard.lock().unwrap().clone()
}

#[tokio::test]
async fn a_listener_hears_what_it_wants_and_is_asked_once() {
    let db = db().await;
    let ada = std::sync::Arc::new(Log {
        for_users: vec!["ada"],
        ..Default::default()
    });
    let events = seam(&[&ada]);
    let recorded = vec![
        Event::new("ada", &DONE, json!({ "n": 1 })),
        Event::new("bob", &DONE, json!({ "n": 2 })),
        Event::with_detail("ada", &INNER, 7_u32),
    ];
    events.record(&db, recorded).await.unwrap();
    assert_eq!(heard(&ada), ["ada:thing.done", "ada:thing.inner+7"]);
    assert_eq!(
        ada.asked.load(Ordering::Relaxed),
        1,
        "one question per recording"
    );

    let interest = events.interest(&db, &["bob"]).await.unwrap();
    assert!(interest.is_empty(), "nobody listens for bob");
    assert!(!interest.wants("bob", &DONE));
    assert!(interest.wants("carol", &DONE), "not asked about: maybe");
    events.record(&db, Vec::new()).await.unwrap();
    assert_eq!(
        ada.asked.load(Ordering::Relaxed),
        2,
        "nothing recorded, nothing asked"
    );
}

#[tokio::test]
async fn events_recorded_in_turn_are_heard_next_and_a_loop_is_stopped() {
    let db = db().await;
    let echo = std::sync::Arc::new(Log {
        for_users: vec!["ada"],
        echo: true,
        ..Default::default()
    });
    let ear = std::sync::Arc::new(Log {
        for_users: vec!["ada"],
        ..Default::default()
    });
    let events = seam(&[&echo, &ear]);
    let done = || vec![Event::new("ada", &DONE, json!({}))];
    events.record(&db, done()).await.unwrap();
    assert_eq!(heard(&ear), ["ada:thing.done", "ada:thing.echoed"]);
    assert_eq!(
        ear.asked.load(Ordering::Relaxed),
        1,
        "asked once: the echo's tenant was known"
    );

    let looping = std::sync::Arc::new(Log {
        for_users: vec!["ada"],
        echo_echoes: true,
        ..Default::default()
    });
    let events = seam(&[&looping]);
    let err = events.record(&db, done()).await.unwrap_err();
    assert!(matches!(err, EventError::Loop), "{err}");
}

#[tokio::test]
async fn a_name_declared_twice_is_refused_and_a_domain_installed_again_replaces_its_own() {
    const AGAIN: EventType = EventType::new("thing.done", "the same name");
    let events = Events::default();
    events
        .register("things", &[&DONE, &INNER], Vec::new())
        .unwrap();
    events.register("others", &[&ECHO], Vec::new()).unwrap();
    let err = events
        .register("copycat", &[&AGAIN], Vec::new())
        .unwrap_err();
    assert!(matches!(err, EventError::Duplicate("thing.done")), "{err}");
    // Installed again: its entry is replaced in place, the others' stay.
    events.register("things", &[&DONE], Vec::new()).unwrap();
    let names: Vec<&str> = events.declared().iter().map(|t| t.name).collect();
    assert_eq!(names, ["thing.done", "thing.echoed"]);
}
