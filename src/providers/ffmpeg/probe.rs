//! `ffprobe`: what a file holds (its duration, whether it has audio and video), read
//! through the allow-lists of [`super::args`]: a local file, through the file protocol
//! and the video containers only.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::args::{self, DEMUXERS};
use super::process;
use crate::providers::ExecError;

#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub duration_s: f64,
    pub has_audio: bool,
    pub has_video: bool,
    pub width: Option<i32>,
    pub height: Option<i32>,
}

/// Reads the local file `path` with ffprobe (a URL is a file name that does not exist).
pub async fn probe(path: &str, cancel: &CancellationToken) -> Result<Probe, ExecError> {
    let out = process::run("ffprobe", &args::probe(path), cancel).await?;
    let v: Value = serde_json::from_slice(&out)
        .map_err(|e| ExecError::Permanent(format!("media_unreadable: ffprobe's answer: {e}")))?;
    admissible(&v)?;
    Ok(parse(&v))
}

/// Refuses what the allow-lists should have kept out already (a second check, whatever
/// FFmpeg build runs): a container that is not one of the video types (a playlist or a
/// concat list reads other files or URLs; the protocol allow-list keeps those to local
/// files, this keeps them out altogether).
fn admissible(v: &Value) -> Result<(), ExecError> {
    let format = v["format"]["format_name"].as_str().unwrap_or_default();
    let allowed = format
        .split(',')
        .any(|f| DEMUXERS.split(',').any(|d| d == f));
    if !allowed {
        return Err(ExecError::Permanent(format!(
            "media_unreadable: container {format:?} is not one of {DEMUXERS}"
        )));
    }
    Ok(())
}

fn parse(v: &Value) -> Probe {
    let streams = v["streams"].as_array().cloned().unwrap_or_default();
    let of = |kind: &str| streams.iter().find(|s| s["codec_type"] == kind);
    let video = of("video");
    let number = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .or_else(|| v.as_f64())
    };
    Probe {
        duration_s: number(&v["format"]["duration"]).unwrap_or(0.0),
        has_audio: of("audio").is_some(),
        has_video: video.is_some(),
        width: video.and_then(|s| s["width"].as_i64()).map(|w| w as i32),
        height: video.and_then(|s| s["height"].as_i64()).map(|h| h as i32),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_streams_and_duration() {
        let p = parse(&json!({
            "streams": [
                {"codec_type": "video", "width": 320, "height": 240},
                {"codec_type": "audio", "sample_rate": "44100"}
            ],
            "format": {"duration": "4.020000"}
        }));
        assert_eq!(
            p,
            Probe {
                duration_s: 4.02,
                has_audio: true,
                has_video: true,
                width: Some(320),
                height: Some(240)
            }
        );
        let silent = parse(&json!({"streams": [{"codec_type": "video"}], "format": {}}));
        assert!(!silent.has_audio && silent.duration_s == 0.0);
    }

    /// With the real ffprobe: a playlist and a concat list (each naming a file that is
    /// there to read) are refused; a Matroska is read.
    #[tokio::test]
    async fn playlists_and_concat_lists_are_refused_by_ffprobe_itself() {
        if !super::super::ffmpeg_here("playlists_and_concat_lists_are_refused_by_ffprobe_itself") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mkv = dir.path().join("a.mkv");
        let made = std::process::Command::new("ffmpeg")
            .args([
                "-nostdin",
                "-v",
                "error",
                "-f",
                "lavfi",
                "-i",
                "sine=duration=1",
            ])
            .arg(&mkv)
            .status()
            .unwrap();
        assert!(made.success());
        let cancel = CancellationToken::new();
        let p = probe(&mkv.display().to_string(), &cancel).await.unwrap();
        assert!(p.has_audio && (p.duration_s - 1.0).abs() < 0.1, "{p:?}");
        let m3u8 = dir.path().join("a.m3u8");
        std::fs::write(
            &m3u8,
            format!(
                "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:{}\n#EXT-X-ENDLIST\n",
                mkv.display()
            ),
        )
        .unwrap();
        let concat = dir.path().join("a.txt");
        std::fs::write(
            &concat,
            format!("ffconcat version 1.0\nfile '{}'\n", mkv.display()),
        )
        .unwrap();
        for refused in [m3u8, concat] {
            let e = probe(&refused.display().to_string(), &cancel)
                .await
                .unwrap_err();
            assert!(
                matches!(&e, ExecError::Permanent(m) if m.starts_with("media_unreadable:")),
                "{}: {e}",
                refused.display()
            );
        }
    }

    #[test]
    fn only_the_video_containers_are_admitted() {
        let of = |format: &str| json!({"format": {"format_name": format}, "streams": []});
        assert_eq!(admissible(&of("matroska,webm")), Ok(()));
        assert_eq!(admissible(&of("mov,mp4,m4a,3gp,3g2,mj2")), Ok(()));
        for format in ["hls", "concat", "dash", "image2", "wav", ""] {
            let e = admissible(&of(format)).unwrap_err();
            assert!(
                matches!(&e, ExecError::Permanent(m) if m.starts_with("media_unreadable:")),
                "{format}: {e}"
            );
        }
    }
}
