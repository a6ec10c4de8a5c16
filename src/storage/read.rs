//! Reads: heads, whole or ranged streams, deletes and listings.

use std::ops::Range;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::{GetOptions, GetRange, ObjectStoreExt as _};

use super::key::Key;
use super::{Storage, StorageError};

/// What the store knows of an object.
#[derive(Debug, Clone)]
pub struct Head {
    pub size: u64,
    pub last_modified: DateTime<Utc>,
    pub e_tag: Option<String>,
}

/// An object's bytes (or a range of them), streamed.
pub struct Read {
    pub head: Head,
    /// The bytes sent: all of them, or the range asked for.
    pub range: Range<u64>,
    pub bytes: BoxStream<'static, Result<Bytes, StorageError>>,
}

/// An object found by [`Storage::list`].
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its path; not always a [`Key`] (a stray file put there by hand).
    pub path: String,
    pub size: u64,
    pub last_modified: DateTime<Utc>,
}

impl Storage {
    pub async fn head(&self, key: &Key) -> Result<Head, StorageError> {
        let m = self.store.head(&key.path()).await?;
        Ok(Head {
            size: m.size,
            last_modified: m.last_modified,
            e_tag: m.e_tag,
        })
    }

    /// The object, or `range` of it (end exclusive; check it against [`Storage::head`]'s
    /// size first: [`super::range::parse`] does).
    pub async fn read(&self, key: &Key, range: Option<Range<u64>>) -> Result<Read, StorageError> {
        let options = GetOptions {
            range: range.map(GetRange::Bounded),
            ..Default::default()
        };
        let got = match self.store.get_opts(&key.path(), options).await {
            Ok(got) => got,
            Err(e) => return Err(e.into()),
        };
        let head = Head {
            size: got.meta.size,
            last_modified: got.meta.last_modified,
            e_tag: got.meta.e_tag.clone(),
        };
        let range = got.range.clone();
        let bytes = got.into_stream().map_err(StorageError::from).boxed();
        Ok(Read { head, range, bytes })
    }

    /// Removes `key`; an object already gone is not an error.
    pub async fn delete(&self, key: &str) -> Result<(), StorageError> {
        let path = object_store::path::Path::from(key);
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Every object under `prefix` (a tenant, or everything with `None`).
    pub fn list(&self, prefix: Option<&str>) -> BoxStream<'static, Result<Listed, StorageError>> {
        let prefix = prefix.map(object_store::path::Path::from);
        self.store
            .list(prefix.as_ref())
            .map(|m| {
                let m = m?;
                Ok(Listed {
                    path: m.location.to_string(),
                    size: m.size,
                    last_modified: m.last_modified,
                })
            })
            .boxed()
    }
}
