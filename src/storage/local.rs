//! A stored file as a path on this machine, for a tool that reads a container's metadata
//! (ffprobe at a video analysis's submission). On S3 the bytes are downloaded to a
//! temporary file first: a tool is never handed a URL, so nothing in a file (an HLS
//! playlist naming other URLs, say) can make it fetch from the network on the platform's
//! behalf, and a tool limited to the `file` protocol can read it.

use std::io::SeekFrom;
use std::ops::Range;
use std::path::{Path, PathBuf};

use futures::StreamExt as _;
use tokio::io::{AsyncSeekExt as _, AsyncWriteExt as _};

use super::key::Key;
use super::{Storage, StorageError};

/// Bytes copied from each end of a large object: containers keep their index (MP4's
/// `moov`, Matroska's segment info) at the start or at the end, rarely in the middle.
pub const METADATA_WINDOW: u64 = 16 * 1024 * 1024;

/// A file on this machine for reading a stored object's metadata; a downloaded copy is
/// removed when this is dropped.
#[derive(Debug)]
pub enum LocalFile {
    /// The local store's own file, whole (never removed here).
    Stored(PathBuf),
    /// A copy downloaded from the bucket: of the same length as the object, whole when
    /// it is small, else its first and last [`METADATA_WINDOW`] bytes with a hole
    /// (zeros) between them. For reading metadata, not for decoding.
    Copy(tempfile::TempPath),
}

impl LocalFile {
    pub fn path(&self) -> &Path {
        match self {
            LocalFile::Stored(p) => p,
            LocalFile::Copy(p) => p,
        }
    }
}

impl Storage {
    /// `key` as a file on this machine to read its metadata from ([`LocalFile`]).
    pub async fn metadata_file(&self, key: &Key) -> Result<LocalFile, StorageError> {
        if !self.presigns() {
            return Ok(LocalFile::Stored(
                Path::new(&self.settings.root).join(self.full_path(key).as_ref()),
            ));
        }
        let size = self.head(key).await?.size;
        let (file, path) = tempfile::NamedTempFile::new()
            .map_err(StorageError::Local)?
            .into_parts();
        let mut file = tokio::fs::File::from_std(file);
        let mut ranges: Vec<Range<u64>> = Vec::with_capacity(2);
        if size <= 2 * METADATA_WINDOW {
            ranges.push(0..size);
        } else {
            ranges.push(0..METADATA_WINDOW);
            ranges.push(size - METADATA_WINDOW..size);
        }
        for range in ranges {
            file.seek(SeekFrom::Start(range.start))
                .await
                .map_err(StorageError::Local)?;
            let mut read = self.read(key, Some(range.clone())).await?;
            let mut left = range.end - range.start;
            while let Some(chunk) = read.bytes.next().await {
                let chunk = chunk?;
                // The object may have changed since its head was read: never past the range.
                let take = (chunk.len() as u64).min(left) as usize;
                file.write_all(&chunk[..take])
                    .await
                    .map_err(StorageError::Local)?;
                left -= take as u64;
            }
        }
        // The hole between the ends reads as zeros; the file has the object's length.
        file.set_len(size).await.map_err(StorageError::Local)?;
        file.flush().await.map_err(StorageError::Local)?;
        Ok(LocalFile::Copy(path))
    }
}
