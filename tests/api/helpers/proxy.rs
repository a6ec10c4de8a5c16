//! A TCP forwarder to a real service that a test can take down and bring back.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// A TCP forwarder to a real service that a test can take down and bring back, to
/// simulate an outage without touching the shared service.
pub struct Proxy {
    pub port: u16,
    up: Arc<std::sync::atomic::AtomicBool>,
    /// Cancelled to cut every open connection; replaced on each outage.
    cut: Arc<Mutex<CancellationToken>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(target: &'static str) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let cut = Arc::new(Mutex::new(CancellationToken::new()));
        let (up2, cut2) = (up.clone(), cut.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                if !up2.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let token = cut2.lock().unwrap().clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = token.cancelled() => {}
                    }
                });
            }
        });
        Proxy {
            port,
            up,
            cut,
            task,
        }
    }

    pub fn down(&self) {
        self.up.store(false, Ordering::SeqCst);
        let mut cut = self.cut.lock().unwrap();
        cut.cancel();
        *cut = CancellationToken::new();
    }

    pub fn up(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.down();
        self.task.abort();
    }
}
