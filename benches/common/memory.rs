//! A process's resident set, read from `/proc/<pid>/status`.

/// Resident memory in KiB: all of it, the anonymous part (heap, stacks: the process's
/// own) and the file pages (code and data mapped from files, shared with every process
/// that maps them).
pub struct Rss {
    pub total: u64,
    pub anon: u64,
    pub file: u64,
}

/// The resident set of process `pid` (`"self"` for this one).
pub fn rss(pid: &str) -> Option<Rss> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some(Rss {
        total: field("VmRSS:")?,
        anon: field("RssAnon:")?,
        file: field("RssFile:")? + field("RssShmem:").unwrap_or(0),
    })
}
