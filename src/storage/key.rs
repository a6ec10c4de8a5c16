//! [`Key`]: where a file lives in the store, `<tenant>/<purpose>/<id>.<ext>`. Every part
//! is checked against a narrow alphabet, so nothing a user sends becomes a path
//! component (no `..`, no `/`, no empty part) and a key names its owner by construction.

use std::fmt;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a storage key: {0}")]
pub struct KeyError(&'static str);

/// A checked object key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key(String);

fn part_ok(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Key {
    /// `tenant/purpose/id.ext`, each part checked.
    pub fn new(tenant: &str, purpose: &str, id: &str, ext: &str) -> Result<Key, KeyError> {
        if !part_ok(tenant, 64) {
            return Err(KeyError("tenant"));
        }
        if !part_ok(purpose, 32) {
            return Err(KeyError("purpose"));
        }
        if !part_ok(id, 128) {
            return Err(KeyError("id"));
        }
        if ext.is_empty() || ext.len() > 8 || !ext.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(KeyError("extension"));
        }
        Ok(Key(format!("{tenant}/{purpose}/{id}.{ext}")))
    }

    /// A key read back from a URL or the store's listing.
    pub fn parse(s: &str) -> Result<Key, KeyError> {
        let mut parts = s.split('/');
        let (Some(tenant), Some(purpose), Some(file), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(KeyError("shape"));
        };
        let (id, ext) = file.rsplit_once('.').ok_or(KeyError("extension"))?;
        Key::new(tenant, purpose, id, ext)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tenant that owns it.
    pub fn tenant(&self) -> &str {
        self.0.split('/').next().unwrap_or_default()
    }

    /// The extension, which says its content type ([`super::sniff::content_type_of`]).
    pub fn extension(&self) -> &str {
        self.0.rsplit_once('.').map(|(_, e)| e).unwrap_or_default()
    }

    /// The file name for `Content-Disposition`.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or_default()
    }

    pub(crate) fn path(&self) -> object_store::path::Path {
        object_store::path::Path::from(self.0.as_str())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_take_only_narrow_parts() {
        let k = Key::new("u1", "video", "0193abc", "mp4").unwrap();
        assert_eq!(k.as_str(), "u1/video/0193abc.mp4");
        assert_eq!(Key::parse(k.as_str()).unwrap(), k);
        assert_eq!(
            (k.tenant(), k.extension(), k.file_name()),
            ("u1", "mp4", "0193abc.mp4")
        );
        for bad in [
            "../x/y.png",
            "u1/video/../a.mp4",
            "u1//a.mp4",
            "u1/video/a",
            "u1/video/a.b/c",
            "u1/v/a.mp 4",
            "u1/video/a.mp4/x",
            "",
        ] {
            assert!(Key::parse(bad).is_err(), "{bad} must be refused");
        }
        assert!(Key::new("u/1", "video", "a", "mp4").is_err());
        assert!(Key::new("u1", "video", "..", "mp4").is_err());
    }
}
