//! The topology as text (`conveyor topology`) and as a Mermaid flowchart
//! (`conveyor topology --mermaid`, the docs' diagram).

use std::time::Duration;

use super::Topology;

impl Topology {
    /// A plain-text listing for `conveyor topology`.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "namespace {} ({:?} queues)\nexchanges: {} (direct), {} (direct), {} (direct), {} (fanout)\n\n",
            self.namespace,
            self.queue_type,
            self.work_exchange(),
            self.delay_exchange(),
            self.dead_letter_exchange(),
            self.events_exchange()
        );
        for q in &self.queues {
            out.push_str(&format!(
                "{}  [group {}] prefetch {} max attempts {}: {}\n  retry: {}\n  dead letters: {}\n",
                q.name,
                q.spec.group,
                q.prefetch,
                q.max_attempts,
                q.spec.purpose,
                q.retry
                    .iter()
                    .map(|(_, n)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                q.dlq
            ));
        }
        for d in &self.delays {
            out.push_str(&format!(
                "{}  waits {} then feeds {}: {}\n",
                d.name,
                human(d.delay),
                self.queue(d.spec.target).name,
                d.spec.purpose
            ));
        }
        out
    }

    /// A Mermaid flowchart of exchanges, queues and dead-letter paths.
    pub fn mermaid(&self) -> String {
        let id = |s: &str| s.replace(['.', '-'], "_");
        let work = self.work_exchange();
        let delay = self.delay_exchange();
        let dlx = self.dead_letter_exchange();
        let mut out = String::from("flowchart LR\n");
        out.push_str(&format!(
            "  {}{{{{{work}}}}}\n  {}{{{{{delay}}}}}\n  {}{{{{{dlx}}}}}\n",
            id(&work),
            id(&delay),
            id(&dlx)
        ));
        for q in &self.queues {
            out.push_str(&format!(
                "  {} --> {}[{}]\n",
                id(&work),
                id(&q.name),
                q.name
            ));
            out.push_str(&format!(
                "  {} -. reject/exhausted .-> {} --> {}[({})]\n",
                id(&q.name),
                id(&dlx),
                id(&q.dlq),
                q.dlq
            ));
            for (d, r) in &q.retry {
                out.push_str(&format!(
                    "  {} --> {}[{}] -. TTL {} .-> {}\n",
                    id(&delay),
                    id(r),
                    r,
                    human(*d),
                    id(&q.name)
                ));
            }
        }
        for d in &self.delays {
            let target = &self.queue(d.spec.target).name;
            out.push_str(&format!(
                "  {} --> {}[{}] -. TTL {} .-> {}\n",
                id(&delay),
                id(&d.name),
                d.name,
                human(d.delay),
                id(target)
            ));
        }
        out
    }
}

/// `1500ms` → "1500ms", `5s` → "5s", `120s` → "2m", `30m` → "30m".
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}
