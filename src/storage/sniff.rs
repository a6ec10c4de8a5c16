//! What a file is, read from its first bytes (the `infer` crate's signatures), never from
//! the client's name or header; which kinds each upload purpose accepts; and the content
//! type a stored file is served with, from the extension the store gave its key.

/// Bytes read before deciding what a file is (the longest signature we rely on, MP4's
/// `ftyp` box brand, sits in the first 12; more lets `infer` tell close formats apart).
pub const SNIFF_BYTES: usize = 512;

/// A sniffed kind: the content type and the extension its key gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub content_type: &'static str,
    pub extension: &'static str,
}

/// An upload's purpose: what kinds it accepts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    Video,
    Image,
    Audio,
}

impl Purpose {
    pub fn parse(s: &str) -> Option<Purpose> {
        match s {
            "video" => Some(Purpose::Video),
            "image" => Some(Purpose::Image),
            "audio" => Some(Purpose::Audio),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Video => "video",
            Purpose::Image => "image",
            Purpose::Audio => "audio",
        }
    }

    /// The content types it accepts.
    pub fn accepts(self) -> &'static [&'static str] {
        match self {
            Purpose::Image => &["image/png", "image/jpeg", "image/webp", "image/gif"],
            Purpose::Video => &[
                "video/mp4",
                "video/quicktime",
                "video/webm",
                "video/x-matroska",
            ],
            Purpose::Audio => &[
                "audio/mpeg",
                "audio/x-wav",
                "audio/ogg",
                "audio/x-flac",
                "audio/m4a",
                "audio/aac",
            ],
        }
    }
}

/// The extension a key gets for a content type `purpose` accepts (a presigned upload
/// declares its type; the bytes are checked against it at completion).
pub fn extension_of(purpose: Purpose, content_type: &str) -> Option<&'static str> {
    if !purpose.accepts().contains(&content_type) {
        return None;
    }
    Some(match content_type {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/webp" => "webp",
        "image/gif" => "gif",
        "video/mp4" => "mp4",
        "video/quicktime" => "mov",
        "video/webm" => "webm",
        "video/x-matroska" => "mkv",
        "audio/mpeg" => "mp3",
        "audio/x-wav" => "wav",
        "audio/ogg" => "ogg",
        "audio/x-flac" => "flac",
        "audio/m4a" => "m4a",
        "audio/aac" => "aac",
        _ => return None,
    })
}

/// What `head` (a file's first bytes) is, if `infer` knows it.
pub fn sniff(head: &[u8]) -> Option<Kind> {
    let t = infer::get(head)?;
    Some(Kind {
        content_type: t.mime_type(),
        extension: t.extension(),
    })
}

/// `head` as a file of `purpose`: its kind, or why not (for the REJECTED reason).
pub fn check(purpose: Purpose, head: &[u8]) -> Result<Kind, String> {
    match sniff(head) {
        Some(k) if purpose.accepts().contains(&k.content_type) => Ok(k),
        Some(k) => Err(format!(
            "the file is {} ({}), not one of the {} types: {}",
            k.content_type,
            k.extension,
            purpose.as_str(),
            purpose.accepts().join(", ")
        )),
        None => Err(format!(
            "the file's type could not be recognised from its bytes; {} uploads take {}",
            purpose.as_str(),
            purpose.accepts().join(", ")
        )),
    }
}

/// The content type a stored file is served with, from its key's extension (the store
/// chose it from the sniffed kind, so it is never the client's word).
pub fn content_type_of(extension: &str) -> &'static str {
    match extension {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "mp4" => "video/mp4",
        "mov" => "video/quicktime",
        "webm" => "video/webm",
        "mkv" => "video/x-matroska",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "flac" => "audio/flac",
        "m4a" => "audio/mp4",
        "aac" => "audio/aac",
        "glb" => "model/gltf-binary",
        "json" => "application/json",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_bytes() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(check(Purpose::Image, png).unwrap().extension, "png");
        let mp4 = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom";
        assert_eq!(
            check(Purpose::Video, mp4).unwrap().content_type,
            "video/mp4"
        );
        // A Windows executable named .mp4 is still an executable.
        let exe = b"MZ\x90\0\x03\0\0\0\x04\0\0\0\xff\xff\0\0";
        let why = check(Purpose::Video, exe).unwrap_err();
        assert!(why.contains("not one of the video types"), "{why}");
        assert!(check(Purpose::Image, mp4).is_err());
        assert!(check(Purpose::Audio, b"hello, plain text").is_err());
    }
}
