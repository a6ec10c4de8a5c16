//! Real small files the simulated provider makes, so the embedded default shows real
//! media end to end: a PNG drawn from the prompt's digest (images, and the poster of a
//! video) and a GLB cube (3D models). Each is written through the storage module and
//! reported as a [`GeneratedFile`]; the step's commit records it.

use bytes::Bytes;

use crate::storage::records::{Dimensions, GeneratedFile};
use crate::storage::sniff::Kind;
use crate::storage::{Key, Storage, StorageError};

const PNG: Kind = Kind {
    content_type: "image/png",
    extension: "png",
};
const GLB: Kind = Kind {
    content_type: "model/gltf-binary",
    extension: "glb",
};

/// Why a file could not be made or stored.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("encoding the image: {0}")]
    Encode(#[from] png::EncodingError),
    #[error(transparent)]
    Store(#[from] StorageError),
}

/// Where a task's step output goes (every provider's): `<user>/generated/<task>-<step>.<ext>`. The same
/// step of the same task always writes the same key, so a retry overwrites its own
/// earlier try instead of leaving a second file.
pub(super) fn key_of(user: &str, task: &str, step: &str, kind: Kind) -> Result<Key, StorageError> {
    Ok(Key::new(
        user,
        "generated",
        &format!("{task}-{step}"),
        kind.extension,
    )?)
}

/// A `width`×`height` PNG: diagonal bands in colours taken from `seed`.
pub fn draw_png(seed: &[u8], width: u32, height: u32) -> Result<Vec<u8>, png::EncodingError> {
    let pick = |i: usize| seed.get(i % seed.len().max(1)).copied().unwrap_or(128);
    let (a, b) = ([pick(0), pick(1), pick(2)], [pick(3), pick(4), pick(5)]);
    let mut pixels = Vec::with_capacity((width * height * 3) as usize);
    for y in 0..height {
        for x in 0..width {
            let t = ((x + y) % 64) as u16;
            for c in 0..3 {
                let v = (a[c] as u16 * (64 - t) + b[c] as u16 * t) / 64;
                pixels.push(v as u8);
            }
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&pixels)?;
    writer.finish()?;
    Ok(out)
}

/// A unit cube as binary glTF 2.0: one mesh of 8 positions and 36 indices.
pub fn cube_glb() -> Vec<u8> {
    let mut bin = Vec::new();
    for p in [
        [0., 0., 0.],
        [1., 0., 0.],
        [1., 1., 0.],
        [0., 1., 0.],
        [0., 0., 1.],
        [1., 0., 1.],
        [1., 1., 1.],
        [0., 1., 1.],
    ] {
        for v in p {
            bin.extend_from_slice(&(v as f32).to_le_bytes());
        }
    }
    let indices: [u16; 36] = [
        0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4, 2, 3, 7, 2, 7, 6, 1, 2, 6, 1, 6, 5,
        0, 4, 7, 0, 7, 3,
    ];
    for i in indices {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    let json = serde_json::json!({
        "asset": {"version": "2.0", "generator": "conveyor simulated provider"},
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 96, "target": 34962},
            {"buffer": 0, "byteOffset": 96, "byteLength": 72, "target": 34963}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 8, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 1]},
            {"bufferView": 1, "componentType": 5123, "count": 36, "type": "SCALAR"}
        ],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "nodes": [{"mesh": 0}],
        "scenes": [{"nodes": [0]}],
        "scene": 0
    });
    let mut json = json.to_string().into_bytes();
    while !json.len().is_multiple_of(4) {
        json.push(b' ');
    }
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut glb = Vec::with_capacity(total);
    glb.extend_from_slice(b"glTF");
    glb.extend_from_slice(&2u32.to_le_bytes());
    glb.extend_from_slice(&(total as u32).to_le_bytes());
    glb.extend_from_slice(&(json.len() as u32).to_le_bytes());
    glb.extend_from_slice(b"JSON");
    glb.extend_from_slice(&json);
    glb.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    glb.extend_from_slice(b"BIN\0");
    glb.extend_from_slice(&bin);
    glb
}

/// Draws and stores a PNG for a task's step.
pub async fn store_png(
    storage: &Storage,
    (user, task, step): (&str, &str, &str),
    seed: &[u8],
    (width, height): (u32, u32),
) -> Result<GeneratedFile, ArtifactError> {
    let bytes = draw_png(seed, width, height)?;
    let written = storage
        .put(&key_of(user, task, step, PNG)?, Bytes::from(bytes), PNG)
        .await?;
    let dims = Dimensions {
        width: Some(width as i32),
        height: Some(height as i32),
        duration_ms: None,
    };
    Ok(GeneratedFile::new(&written, dims))
}

/// Stores the cube for a task's step.
pub async fn store_glb(
    storage: &Storage,
    (user, task, step): (&str, &str, &str),
) -> Result<GeneratedFile, ArtifactError> {
    let written = storage
        .put(
            &key_of(user, task, step, GLB)?,
            Bytes::from(cube_glb()),
            GLB,
        )
        .await?;
    Ok(GeneratedFile::new(&written, Dimensions::default()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_what_they_claim() {
        let png = draw_png(b"seed-bytes", 64, 32).unwrap();
        assert_eq!(
            crate::storage::sniff::sniff(&png).unwrap().content_type,
            "image/png"
        );
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (64, 32));
        let glb = cube_glb();
        assert_eq!(&glb[..4], b"glTF");
        assert_eq!(
            u32::from_le_bytes(glb[8..12].try_into().unwrap()) as usize,
            glb.len()
        );
        assert_eq!(glb.len() % 4, 0);
    }
}
