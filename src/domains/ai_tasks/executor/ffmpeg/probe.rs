//! `ffprobe`: what a file holds (its duration, whether it has audio and video).

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::process;
use crate::domains::ai_tasks::executor::ExecError;

#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub duration_s: f64,
    pub has_audio: bool,
    pub has_video: bool,
    pub width: Option<i32>,
    pub height: Option<i32>,
}

/// Reads `path` (a file, or a URL ffprobe can read) with ffprobe.
pub async fn probe(path: &str, cancel: &CancellationToken) -> Result<Probe, ExecError> {
    let out = process::run(
        "ffprobe",
        &[
            "-v",
            "error",
            "-print_format",
            "json",
            "-show_streams",
            "-show_format",
            path,
        ],
        cancel,
    )
    .await?;
    let v: Value = serde_json::from_slice(&out)
        .map_err(|e| ExecError::Permanent(format!("media_unreadable: ffprobe's answer: {e}")))?;
    Ok(parse(&v))
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
}
