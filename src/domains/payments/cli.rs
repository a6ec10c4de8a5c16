//! `conveyor payments sign`: signs a provider event with the test keys of the
//! configuration and prints the `curl` that delivers it, so an operator can replay a
//! provider's event by hand in staging.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum};
use futures::future::BoxFuture;

use super::settings::PaymentSettings;
use super::sign::{self, RsaSigner};
use crate::domains::{Cli, CliContext};
use crate::settings::Settings;

/// `conveyor payments …`, mounted by the registry.
pub const CLI: Cli = Cli {
    command: PaymentsArgs::command,
    run,
};

/// Payment helpers: sign a provider event with the configured test keys.
#[derive(Debug, Parser)]
#[command(name = "payments")]
pub struct PaymentsArgs {
    #[command(subcommand)]
    pub command: PaymentsCommand,
}

fn run<'a>(
    context: &'a CliContext,
    matches: &'a clap::ArgMatches,
) -> BoxFuture<'a, anyhow::Result<()>> {
    Box::pin(async move {
        let args = PaymentsArgs::from_arg_matches(matches)?;
        sign_event(&context.settings, args.command)
    })
}

#[derive(Debug, Subcommand)]
pub enum PaymentsCommand {
    /// Sign an event file and print the curl command that posts it.
    ///
    /// hmac: the file is the event JSON (`{"id","type","data":{…}}`), signed with the first
    /// of `payments.hmac_secrets`. alipay: the file is a JSON object of the notify's
    /// parameters, signed with `payments.alipay.test_signing_key`. wechat: the file is the
    /// plaintext `resource` (the transaction or refund), encrypted with the APIv3 key and
    /// signed with `payments.wechat.test_signing_key` as `test_signing_serial`.
    Sign {
        #[arg(long, value_enum)]
        provider: Provider,
        #[arg(long)]
        file: std::path::PathBuf,
        /// The server to post to.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// WeChat: the notification's event type.
        #[arg(long, default_value = "TRANSACTION.SUCCESS")]
        event_type: String,
        /// WeChat: the notification id (the inbox key); random when absent.
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Provider {
    Hmac,
    Alipay,
    Wechat,
}

fn sign_event(settings: &Settings, cmd: PaymentsCommand) -> anyhow::Result<()> {
    let PaymentsCommand::Sign {
        provider,
        file,
        url,
        event_type,
        id,
    } = cmd;
    let conf = PaymentSettings::from_settings(settings)?;
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let now = chrono::Utc::now().timestamp();
    let url = url.trim_end_matches('/');
    let command = match provider {
        Provider::Hmac => {
            let secret = conf
                .hmac_secrets
                .first()
                .context("payments.hmac_secrets is empty: nothing to sign with")?;
            let body = compact(&text)?;
            let header = sign::hmac_header(secret.as_bytes(), now, body.as_bytes());
            curl(
                &format!("{url}/v1/webhooks/payments/hmac"),
                &[
                    ("content-type", "application/json"),
                    ("conveyor-signature", &header),
                ],
                &body,
            )
        }
        Provider::Alipay => {
            let key = signer(&conf.alipay.test_signing_key, "payments.alipay")?;
            let params: BTreeMap<String, serde_json::Value> =
                serde_json::from_str(&text).context("the file must be a JSON object")?;
            let params = params
                .into_iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => (k, s),
                    other => (k, other.to_string()),
                })
                .collect();
            let form = sign::alipay_form(&params, &key)?;
            curl(
                &format!("{url}/v1/webhooks/payments/alipay"),
                &[("content-type", "application/x-www-form-urlencoded")],
                &form,
            )
        }
        Provider::Wechat => {
            let w = &conf.wechat;
            let key = signer(&w.test_signing_key, "payments.wechat")?;
            if w.test_signing_serial.is_empty() {
                bail!("payments.wechat.test_signing_serial is empty");
            }
            let id = id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            let n = sign::wechat_notification(
                &id,
                &event_type,
                compact(&text)?.as_bytes(),
                w.api_v3_key.as_bytes(),
                &key,
                &w.test_signing_serial,
                now,
            )?;
            let mut headers: Vec<(&str, &str)> = vec![("content-type", "application/json")];
            headers.extend(n.headers.iter().map(|(k, v)| (*k, v.as_str())));
            curl(
                &format!("{url}/v1/webhooks/payments/wechat"),
                &headers,
                &n.body,
            )
        }
    };
    println!("{command}");
    Ok(())
}

fn signer(pem: &str, section: &str) -> anyhow::Result<RsaSigner> {
    if pem.is_empty() {
        bail!("{section}.test_signing_key is empty: nothing to sign with");
    }
    RsaSigner::from_pem(pem).with_context(|| format!("{section}.test_signing_key"))
}

/// The JSON of the file on one line (what is signed is exactly what curl sends).
fn compact(text: &str) -> anyhow::Result<String> {
    let v: serde_json::Value = serde_json::from_str(text).context("the file is not JSON")?;
    Ok(v.to_string())
}

/// A shell-safe `curl` command line.
fn curl(url: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut out = format!("curl -sS -X POST {}", quote(url));
    for (k, v) in headers {
        out.push_str(&format!(" -H {}", quote(&format!("{k}: {v}"))));
    }
    out.push_str(&format!(" --data-binary {}", quote(body)));
    out
}

/// Single-quoted for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
