//! The pages conveyor serves, in a real browser: headless Chromium driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`; `.ci/run` installs them). `ops_console`
//! operates queues and dead letters from /ops; `demo` watches a task on /demo (built on
//! the TypeScript client) through two dropped connections. Screenshots go to
//! `<target tmp>/<test>/`. Skipped (with a line saying so) when Chromium is missing,
//! unless CONVEYOR_REQUIRE_SERVICES=1.

mod demo;
mod ops_console;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::helpers::wait_until;

/// `name`'s first executable file on PATH (a machine without the package has none: the
/// clean-machine run in .ci/run hides them this way).
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Chromium and its driver (Debian's `chromium`, `chromium-driver`).
pub struct Chromium {
    pub browser: PathBuf,
    pub driver: PathBuf,
}

/// Chromium and its driver where both are here; a missing one fails the test under
/// CONVEYOR_REQUIRE_SERVICES=1 and skips it (saying so) otherwise.
pub fn chromium_here() -> Option<Chromium> {
    let required = std::env::var("CONVEYOR_REQUIRE_SERVICES").is_ok_and(|v| v == "1");
    if let (Some(browser), Some(driver)) = (on_path("chromium"), on_path("chromedriver")) {
        return Some(Chromium { browser, driver });
    }
    assert!(
        !required,
        "chromium and chromium-driver are required (apt-get install chromium chromium-driver)"
    );
    eprintln!(
        "SKIPPED: no chromium / chromedriver on PATH (apt-get install chromium chromium-driver)"
    );
    None
}

/// A chromedriver on a free port, killed on drop.
pub struct Driver {
    child: tokio::process::Child,
    pub port: u16,
    /// The browser it drives.
    browser: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

pub async fn driver(chromium: &Chromium) -> Driver {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let child = tokio::process::Command::new(&chromium.driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromedriver starts");
    wait_until(
        Duration::from_secs(10),
        "chromedriver to listen",
        || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        },
    )
    .await;
    Driver {
        child,
        port,
        browser: chromium.browser.clone(),
    }
}

pub async fn browser(d: &Driver) -> Client {
    let caps = json!({
        "goog:chromeOptions": {
            "binary": d.browser,
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1366,768"],
        },
        "goog:loggingPrefs": { "browser": "ALL" },
    });
    let serde_json::Value::Object(caps) = caps else {
        unreachable!()
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", d.port))
        .await
        .expect("a browser session")
}

pub fn shots(dir: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub async fn shot(c: &Client, dir: &str, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(shots(dir).join(name), png).unwrap();
}

/// The text of the first element matching `css`, or "" while there is none.
pub async fn text(c: &Client, css: &str) -> String {
    match c.find(Locator::Css(css)).await {
        Ok(e) => e.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// An attribute of the first element matching `css`, or "" while there is none.
pub async fn attr(c: &Client, css: &str, name: &str) -> String {
    match c.find(Locator::Css(css)).await {
        Ok(e) => e.attr(name).await.ok().flatten().unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Reads with `read` until the value satisfies `ok` (30 s at most); returns it.
async fn poll<F: Future<Output = String>>(
    what: &str,
    read: impl Fn() -> F,
    ok: impl Fn(&str) -> bool,
) -> String {
    let last = std::cell::RefCell::new(String::new());
    wait_until(Duration::from_secs(30), what, || async {
        let v = read().await;
        let done = ok(&v);
        *last.borrow_mut() = v;
        done
    })
    .await;
    last.into_inner()
}

/// Polls until `css`'s text satisfies `ok`; returns it.
pub async fn wait_text(c: &Client, css: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    poll(&format!("{what}: {css}"), || text(c, css), ok).await
}

/// Polls until `css`'s attribute `name` satisfies `ok`; returns it.
pub async fn wait_attr(
    c: &Client,
    css: &str,
    name: &str,
    what: &str,
    ok: impl Fn(&str) -> bool,
) -> String {
    poll(&format!("{what}: {css} {name}"), || attr(c, css, name), ok).await
}

/// The browser's console entries at SEVERE level (chromedriver's log endpoint).
pub async fn console_errors(c: &Client, d: &Driver) -> Vec<Value> {
    let session = c.session_id().await.unwrap().expect("a session");
    let logs: Value = reqwest::Client::new()
        .post(format!(
            "http://127.0.0.1:{}/session/{session}/se/log",
            d.port
        ))
        .json(&json!({ "type": "browser" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    logs["value"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .collect()
}
