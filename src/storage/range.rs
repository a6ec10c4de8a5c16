//! A download's `Range` header (RFC 9110 §14): one byte range is served as 206; several
//! ranges (rare, and multipart/byteranges bodies are not worth their code) or a header
//! we cannot read get the whole file as 200, as the RFC allows; a range wholly past the
//! end is 416.

use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// The whole object.
    All,
    /// These bytes (end exclusive).
    Part(Range<u64>),
    /// Nothing of it can be sent (416 with `Content-Range: bytes */size`).
    Unsatisfiable,
}

/// What `header` asks of an object of `size` bytes.
pub fn parse(header: Option<&str>, size: u64) -> Wanted {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Wanted::All;
    };
    if spec.contains(',') {
        return Wanted::All;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Wanted::All;
    };
    let (first, last) = (first.trim(), last.trim());
    let range = match (first.parse::<u64>(), last.parse::<u64>()) {
        // bytes=-N: the last N bytes.
        (Err(_), Ok(n)) if first.is_empty() => {
            if n == 0 || size == 0 {
                return Wanted::Unsatisfiable;
            }
            size.saturating_sub(n)..size
        }
        // bytes=A-: from A to the end.
        (Ok(a), Err(_)) if last.is_empty() => a..size,
        // bytes=A-B, inclusive, clipped to the end.
        (Ok(a), Ok(b)) if a <= b => a..(b.saturating_add(1)).min(size),
        _ => return Wanted::All,
    };
    if range.start >= size {
        return Wanted::Unsatisfiable;
    }
    Wanted::Part(range)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_browsers_send_them() {
        assert_eq!(parse(None, 10), Wanted::All);
        assert_eq!(parse(Some("bytes=0-3"), 10), Wanted::Part(0..4));
        assert_eq!(parse(Some("bytes=5-"), 10), Wanted::Part(5..10));
        assert_eq!(parse(Some("bytes=-3"), 10), Wanted::Part(7..10));
        assert_eq!(parse(Some("bytes=8-100"), 10), Wanted::Part(8..10));
        assert_eq!(parse(Some("bytes=10-"), 10), Wanted::Unsatisfiable);
        assert_eq!(parse(Some("bytes=-0"), 10), Wanted::Unsatisfiable);
        assert_eq!(parse(Some("bytes=0-1,4-5"), 10), Wanted::All);
        assert_eq!(parse(Some("bytes=5-2"), 10), Wanted::All);
        assert_eq!(parse(Some("items=0-1"), 10), Wanted::All);
        assert_eq!(parse(Some("bytes=-20"), 10), Wanted::Part(0..10));
    }
}
