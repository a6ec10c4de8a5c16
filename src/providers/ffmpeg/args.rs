//! FFmpeg's and ffprobe's argument lists, in one place so what bounds them can be read
//! (and tested) together: the input is a local file, opened through the file protocol
//! only (never a URL), by the demuxers of the video types uploads take only (no
//! playlist, no concat list, nothing that opens another file), and every output is cut
//! at a length.

/// The audio written: 16 kHz mono signed 16-bit PCM (what speech-to-text takes).
pub const SAMPLE_RATE: u32 = 16_000;
/// Bytes a second of that audio takes: a WAV's length follows from its size.
pub const AUDIO_BYTES_PER_SEC: u64 = SAMPLE_RATE as u64 * 2;

/// The demuxers an upload may be read with: the containers of the video types uploads
/// take (MP4 and QuickTime are `mov`; WebM is `matroska`). HLS, DASH, concat lists,
/// image sequences and the rest open other files or URLs, and are refused.
pub const DEMUXERS: &str = "mov,matroska";

/// The options before `-i`, and the input: the local file `path`, read through the
/// `file` protocol alone (nested opens inherit the list; written `file:` so a `:` in it
/// is never taken for a protocol's name, and a URL is a file name that does not exist)
/// and the video demuxers alone.
fn input(path: &str) -> Vec<String> {
    strings(&[
        "-protocol_whitelist",
        "file",
        "-format_whitelist",
        DEMUXERS,
        "-i",
        &format!("file:{path}"),
    ])
}

/// `ffprobe`'s: streams and format as JSON.
pub fn probe(path: &str) -> Vec<String> {
    let mut args = strings(&[
        "-v",
        "error",
        "-print_format",
        "json",
        "-show_streams",
        "-show_format",
    ]);
    args.extend(input(path));
    args
}

/// The audio as 16 kHz mono WAV in segments of `segment_secs` named by `pattern`, cut at
/// `max_secs` of output: a file whose audio runs longer than it declared (or than the
/// budget has room for) cannot write more.
pub fn audio(path: &str, pattern: &str, segment_secs: u64, max_secs: f64) -> Vec<String> {
    let mut args = strings(&["-nostdin", "-v", "error"]);
    args.extend(input(path));
    args.extend(strings(&[
        "-vn",
        "-t",
        &seconds(max_secs),
        "-ac",
        "1",
        "-ar",
        &SAMPLE_RATE.to_string(),
        "-c:a",
        "pcm_s16le",
        "-f",
        "segment",
        "-segment_time",
        &segment_secs.to_string(),
        "-reset_timestamps",
        "1",
        pattern,
    ]));
    args
}

/// `count` JPEG thumbnails 320 pixels wide, taken evenly across `duration_s`, within the
/// first `max_secs` of the input.
pub fn keyframes(
    path: &str,
    pattern: &str,
    count: u32,
    duration_s: f64,
    max_secs: f64,
) -> Vec<String> {
    let fps = format!(
        "fps={:.6},scale=320:-2",
        f64::from(count) / duration_s.max(0.001)
    );
    let mut args = strings(&["-nostdin", "-v", "error"]);
    args.extend(input(path));
    args.extend(strings(&[
        "-t",
        &seconds(max_secs),
        "-vf",
        &fps,
        "-frames:v",
        &count.to_string(),
        "-q:v",
        "4",
        pattern,
    ]));
    args
}

/// Seconds as FFmpeg reads them, to the millisecond.
fn seconds(s: f64) -> String {
    format!("{:.3}", s.max(0.0))
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|a| (*a).to_owned()).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The value after `flag`, and that it comes before the input (an input option) or
    /// after it (an output option).
    fn after(args: &[String], flag: &str) -> (String, bool) {
        let at = args.iter().position(|a| a == flag).unwrap();
        let input = args.iter().position(|a| a == "-i").unwrap();
        (args[at + 1].clone(), at < input)
    }

    #[test]
    fn every_run_reads_its_input_through_the_file_protocol_and_the_video_demuxers_only() {
        let file = "/tmp/conveyor-ffmpeg/1-t-x/input";
        let runs = [
            probe(file),
            audio(file, "/tmp/o/audio-%03d.wav", 600, 12.5),
            keyframes(file, "/tmp/o/frame-%02d.jpg", 3, 10.0, 12.5),
        ];
        for args in &runs {
            assert_eq!(after(args, "-protocol_whitelist"), ("file".into(), true));
            assert_eq!(after(args, "-format_whitelist"), (DEMUXERS.into(), true));
            assert_eq!(after(args, "-i").0, format!("file:{file}"));
        }
        for refused in ["hls", "concat", "dash", "image2", "http"] {
            assert!(!DEMUXERS.split(',').any(|d| d == refused), "{refused}");
        }
        // What looks like another protocol's URL is a file name.
        for odd in ["concat:a|b", "https://169.254.169.254/x"] {
            assert_eq!(after(&probe(odd), "-i").0, format!("file:{odd}"));
        }
    }

    #[test]
    fn outputs_are_cut_at_their_bound() {
        let file = "/s/input";
        let a = audio(file, "/s/out/audio-%03d.wav", 600, 3.02);
        assert_eq!(after(&a, "-t"), ("3.020".into(), false));
        assert_eq!(after(&a, "-ar"), ("16000".into(), false));
        assert_eq!(after(&a, "-c:a"), ("pcm_s16le".into(), false));
        assert_eq!(a.last().unwrap(), "/s/out/audio-%03d.wav");
        let k = keyframes(file, "/s/out/frame-%02d.jpg", 3, 6.0, 7.06);
        assert_eq!(after(&k, "-t"), ("7.060".into(), false));
        assert_eq!(after(&k, "-frames:v"), ("3".into(), false));
        assert_eq!(
            after(&k, "-vf"),
            ("fps=0.500000,scale=320:-2".into(), false)
        );
    }
}
