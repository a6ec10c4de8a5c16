//! The HELP text of every metric, read from the table in `docs/operations/metrics.md`:
//! one description, written once, for operators reading the docs and for Prometheus
//! (`promtool check metrics` wants one per metric). A metric the table does not name
//! has none, and a test fails on it.

/// The documented metrics: (name, what the table says of it).
pub fn documented() -> Vec<(&'static str, String)> {
    const TABLE: &str = include_str!("../../docs/operations/metrics.md");
    let mut out = Vec::new();
    for row in TABLE.lines() {
        // `| `name{labels}`, `other` | what |`: the names cell ends at the first "` | ".
        let Some((names, what)) = row
            .strip_prefix("| ")
            .filter(|r| r.starts_with("`conveyor_"))
            .and_then(|r| r.split_once("` | "))
        else {
            continue;
        };
        let what = plain(what.trim_end().trim_end_matches('|').trim());
        for part in names.split('`').filter(|p| p.starts_with("conveyor_")) {
            let name = part.split('{').next().unwrap_or(part);
            out.push((name, what.clone()));
        }
    }
    out
}

/// Markdown to a plain line: no backticks, links as their text, `\|` as `|`.
fn plain(md: &str) -> String {
    let mut s = md.replace("\\|", "|").replace('`', "");
    while let (Some(open), Some(mid)) = (s.find('['), s.find("](")) {
        let Some(close) = s[mid..].find(')').map(|c| mid + c) else {
            break;
        };
        if open > mid {
            break;
        }
        let text = s[open + 1..mid].to_owned();
        s.replace_range(open..=close, &text);
    }
    s
}

/// Gives the recorder the HELP text of every documented metric.
pub fn describe() {
    for (name, help) in documented() {
        metrics::describe_counter!(name, help);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_name_of_a_row_and_its_text_in_plain_words() {
        let all = documented();
        let help = |n: &str| all.iter().find(|(m, _)| *m == n).map(|(_, h)| h.clone());
        assert!(all.len() >= 75, "{}", all.len());
        // A row naming two metrics gives both the text.
        assert!(help("conveyor_outbox_pending").is_some());
        assert_eq!(
            help("conveyor_outbox_pending"),
            help("conveyor_outbox_oldest_pending_seconds")
        );
        let text = help("conveyor_payments_applied_total").unwrap();
        assert!(
            !text.contains('`') && text.contains("\"granted\"|\"taken_back\""),
            "{text}"
        );
        assert_eq!(
            plain("see [metrics](metrics.md) and [alerts](alerts.md#x)"),
            "see metrics and alerts"
        );
    }
}
