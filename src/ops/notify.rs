//! Alert notices to webhook receivers: a generic JSON body, or the DingTalk / WeCom
//! robot markdown message, each with a link to the console. Sent in the background with
//! a few tries; a receiver that stays down costs a warning and a counted failure, never
//! the board's next sample.

use std::time::Duration;

use serde::Serialize;

use crate::ops::settings::AlertFormat as Format;

use crate::ops::settings::AlertReceiver as Receiver;
use serde_json::{Value, json};

/// One notice: an episode that fired or resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Notice {
    pub status: &'static str,
    pub id: i64,
    pub rule: String,
    pub queue: String,
    pub summary: String,
    pub value: f64,
    pub threshold: f64,
    pub fired_at: chrono::DateTime<chrono::Utc>,
    pub resolved_at: Option<chrono::DateTime<chrono::Utc>>,
    pub link: Option<String>,
}

impl Notice {
    /// The body for `format`.
    pub fn body(&self, format: Format) -> Value {
        let title = format!(
            "[{}] {} on {}",
            self.status.to_uppercase(),
            self.rule,
            self.queue
        );
        let mut text = format!("### {title}\n\n{}", self.summary);
        if let Some(link) = &self.link {
            text.push_str(&format!("\n\n[Open the ops console]({link})"));
        }
        match format {
            Format::Generic => json!(self),
            Format::Dingtalk => json!({
                "msgtype": "markdown",
                "markdown": { "title": title, "text": text },
            }),
            Format::Wecom => json!({
                "msgtype": "markdown",
                "markdown": { "content": within(text, WECOM_MAX_BYTES) },
            }),
        }
    }
}

/// WeCom's robot takes markdown content of at most 4096 bytes (UTF-8); longer is refused.
const WECOM_MAX_BYTES: usize = 4096;

/// `text` cut to at most `max` bytes at a character boundary, with an ellipsis when cut.
fn within(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
    text
}

/// Posts `notice` to every receiver in the background: three tries each, 5 s apiece.
pub fn send(client: &reqwest::Client, receivers: &[Receiver], notice: Notice) {
    for r in receivers {
        let (client, url, body) = (client.clone(), r.url.clone(), notice.body(r.format));
        tokio::spawn(async move {
            let mut wait = Duration::from_millis(500);
            for attempt in 1..=3 {
                let sent = client
                    .post(&url)
                    .timeout(Duration::from_secs(5))
                    .json(&body)
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status);
                match sent {
                    Ok(_) => {
                        metrics::counter!("conveyor_alert_notices_total", "outcome" => "sent")
                            .increment(1);
                        return;
                    }
                    Err(e) if attempt == 3 => {
                        // Robots carry their token in the query (DingTalk's access_token,
                        // WeCom's key): the log names the receiver without it.
                        tracing::warn!(
                            error = %e.without_url(),
                            receiver = %without_query(&url),
                            "alert notice not delivered"
                        );
                        metrics::counter!("conveyor_alert_notices_total", "outcome" => "failed")
                            .increment(1);
                    }
                    Err(_) => {
                        tokio::time::sleep(wait).await;
                        wait *= 2;
                    }
                }
            }
        });
    }
}

/// A receiver's address as logs may show it: scheme, host and path, without the query
/// (where robots keep their token) or any user info.
pub fn without_query(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            format!(
                "{}://{}{}",
                u.scheme(),
                u.host_str().unwrap_or_default(),
                u.port().map(|p| format!(":{p}")).unwrap_or_default()
            ) + u.path()
        }
        Err(_) => "<unparsable url>".to_owned(),
    }
}

/// The client notices go out with: no redirects (a receiver that redirects would take
/// the notice, and any token in its address, elsewhere).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// The log lines written while a test runs.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A receiver that never answers (a closed port) with its token in the query: the
    /// warning after the last try names the receiver, never the token.
    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_delivery_logs_no_token() {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        // Current-thread runtime: the spawned sends log through this thread's default.
        let _guard = tracing::subscriber::set_default(subscriber);
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let receivers = [Receiver {
            url: format!("http://{closed}/robot/send?access_token=T0KEN-s3cret"),
            format: Format::Dingtalk,
        }];
        let notice = Notice {
            status: "firing",
            id: 1,
            rule: "backlog".into(),
            queue: "ai.short".into(),
            summary: "s".into(),
            value: 1.0,
            threshold: 0.5,
            fired_at: chrono::Utc::now(),
            resolved_at: None,
            link: None,
        };
        send(&client(), &receivers, notice);
        let logged = || String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let start = std::time::Instant::now();
        while !logged().contains("alert notice not delivered") {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no warning: {}",
                logged()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let text = logged();
        assert!(text.contains("/robot/send"), "{text}");
        assert!(
            !text.contains("T0KEN-s3cret") && !text.contains("access_token"),
            "{text}"
        );
    }

    fn golden_notice() -> Notice {
        Notice {
            status: "firing",
            id: 42,
            rule: "backlog".into(),
            queue: "ai.short".into(),
            summary: "ai.short: 1320 messages waiting (over 10x consumer concurrency 128)".into(),
            value: 1320.0,
            threshold: 1280.0,
            fired_at: "2026-12-06T10:00:00Z".parse().unwrap(),
            resolved_at: None,
            link: Some("https://ops.example.com/ops#alert-42".into()),
        }
    }

    /// The bodies as the robots document them: DingTalk's custom robot
    /// (`msgtype: markdown`, `markdown.title` and `markdown.text`), WeCom's group robot
    /// (`msgtype: markdown`, `markdown.content`), and the generic JSON; compared with the
    /// files in `src/ops/golden/`.
    #[test]
    fn notice_bodies_match_the_golden_files() {
        let notice = golden_notice();
        for (format, golden) in [
            (Format::Dingtalk, include_str!("golden/dingtalk.json")),
            (Format::Wecom, include_str!("golden/wecom.json")),
            (Format::Generic, include_str!("golden/generic.json")),
        ] {
            let want: Value = serde_json::from_str(golden).unwrap();
            assert_eq!(notice.body(format), want, "{format:?}");
        }
        let resolved = Notice {
            status: "resolved",
            resolved_at: Some("2026-12-06T10:05:00Z".parse().unwrap()),
            link: None,
            ..golden_notice()
        };
        assert_eq!(
            resolved.body(Format::Dingtalk)["markdown"]["title"],
            "[RESOLVED] backlog on ai.short"
        );
    }

    #[test]
    fn a_wecom_body_stays_within_its_4096_bytes() {
        let long = Notice {
            summary: "队列积压".repeat(2000),
            ..golden_notice()
        };
        let content = long.body(Format::Wecom)["markdown"]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(content.len() <= 4096, "{}", content.len());
        assert!(content.ends_with('…') && content.starts_with("### [FIRING]"));
        // Short ones are untouched.
        assert!(
            !golden_notice().body(Format::Wecom)["markdown"]["content"]
                .as_str()
                .unwrap()
                .ends_with('…')
        );
    }

    #[test]
    fn a_logged_receiver_shows_no_token() {
        assert_eq!(
            super::without_query("https://oapi.dingtalk.com/robot/send?access_token=s3cret"),
            "https://oapi.dingtalk.com/robot/send"
        );
        assert_eq!(
            super::without_query("http://u:p@127.0.0.1:9/hook?key=k"),
            "http://127.0.0.1:9/hook"
        );
    }
}
