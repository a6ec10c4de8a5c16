//! A small client of the conveyor API for the CLI: submit a task, and watch it over the
//! WebSocket with a progress bar until it ends.

use anyhow::{Context as _, bail};
use futures::{SinkExt as _, StreamExt as _};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

pub struct Client {
    base: String,
    key: String,
    http: reqwest::Client,
}

impl Client {
    pub fn new(base: &str, key: &str) -> Self {
        Client {
            base: base.trim_end_matches('/').to_owned(),
            key: key.to_owned(),
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let r = req
            .bearer_auth(&self.key)
            .send()
            .await
            .with_context(|| format!("reaching {}", self.base))?;
        let status = r.status();
        let body: Value = r.json().await.unwrap_or_default();
        if !status.is_success() {
            let msg = body["error"]["message"]
                .as_str()
                .unwrap_or("request failed");
            bail!("{status}: {msg}");
        }
        Ok(body)
    }

    pub async fn submit(
        &self,
        kind: &str,
        prompt: &str,
        params: Option<Value>,
    ) -> anyhow::Result<Value> {
        let body = json!({ "kind": kind, "prompt": prompt, "params": params.unwrap_or_else(|| json!({})) });
        self.call(
            self.http
                .post(format!("{}/v1/tasks", self.base))
                .json(&body),
        )
        .await
    }

    /// `GET path` with `query`.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> anyhow::Result<Value> {
        let mut url = url::Url::parse(&format!("{}{path}", self.base))
            .with_context(|| format!("{}{path} is not a URL", self.base))?;
        url.query_pairs_mut()
            .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        self.call(self.http.get(url)).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.call(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    pub async fn task(&self, id: &str) -> anyhow::Result<Value> {
        self.call(self.http.get(format!("{}/v1/tasks/{id}", self.base)))
            .await
    }

    /// Follows a task to its end, drawing a progress bar; returns the final task.
    pub async fn watch(&self, id: &str) -> anyhow::Result<Value> {
        let ticket = self
            .call(self.http.post(format!("{}/v1/ws-tickets", self.base)))
            .await?;
        let ticket = ticket["ticket"]
            .as_str()
            .context("no ticket in the answer")?;
        let ws_base = self.base.replacen("http", "ws", 1);
        let (mut ws, _) =
            tokio_tungstenite::connect_async(format!("{ws_base}/v1/ws?ticket={ticket}"))
                .await
                .context("opening the WebSocket")?;
        ws.send(Message::Text(
            json!({ "op": "subscribe", "task_id": id })
                .to_string()
                .into(),
        ))
        .await?;
        let bar = ProgressBar::new(100);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{bar:40}] {pos:>3}% {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        while let Some(msg) = ws.next().await {
            let Message::Text(text) = msg? else { continue };
            let f: Value = serde_json::from_str(&text)?;
            match f["type"].as_str() {
                Some("snapshot") => {
                    bar.set_position(f["task"]["progress"].as_u64().unwrap_or(0));
                    bar.set_message(f["task"]["status"].as_str().unwrap_or_default().to_owned());
                }
                Some("event") => {
                    bar.set_position(f["progress"].as_u64().unwrap_or(0));
                    let step = f["step"]
                        .as_str()
                        .map(|s| format!(" · {s}"))
                        .unwrap_or_default();
                    bar.set_message(format!(
                        "{}{step}",
                        f["status"].as_str().unwrap_or_default()
                    ));
                }
                Some("unsubscribed") => break,
                Some("error") => bail!(
                    "{}",
                    f["message"].as_str().unwrap_or("subscription refused")
                ),
                _ => {}
            }
        }
        bar.finish();
        let _ = ws.close(None).await;
        self.task(id).await
    }
}
