//! Alert notices to webhook receivers: a generic JSON body, or the DingTalk / WeCom
//! robot markdown message, each with a link to the console. Sent in the background with
//! a few tries; a receiver that stays down costs a warning and a counted failure, never
//! the board's next sample.

use std::time::Duration;

use serde::Serialize;

use crate::config::{AlertFormat as Format, AlertReceiver as Receiver};
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
                "markdown": { "content": text },
            }),
        }
    }
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
                        tracing::warn!(error = %e, "alert notice not delivered");
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
