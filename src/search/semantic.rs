//! Search by meaning: the vectors a material is found by, how they are stored and
//! compared, and the seam through which the search route embeds a query.
//!
//! A material carries several vectors (its summary, its knowledge entry and chunks of
//! its transcript), all unit length; it scores the best cosine of any of them against
//! the query's, so a question about a detail said once in a long video still finds it.
//! The comparison is exact (every vector of the owner's materials), which the owner
//! filter keeps small: a tenant's library, not the whole index.
//!
//! The embedder is an AI provider's (the same model that embedded the material must
//! embed the query): the search domain asks the platform's providers for it
//! (`crate::providers::Providers::embeddings`).

use async_trait::async_trait;

/// Dimensions of the simulated embedder's vectors.
pub const HASHED_DIMS: usize = 512;

/// Vectors made by one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub model: String,
    /// Unit length, each.
    pub vectors: Vec<Vec<f32>>,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// Nothing here embeds (no provider that can).
    #[error("semantic search is not available: {0}")]
    Unsupported(String),
    /// The provider failed or was busy: worth retrying later.
    #[error("embedding failed: {0}")]
    Failed(String),
}

/// Embeds a search query with the model that embedded the materials.
#[async_trait]
pub trait Embedder: Send + Sync {
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError>;
}

/// `v` scaled to unit length (a zero vector stays zero).
pub fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Cosine of two unit vectors (their dot product); vectors of another length (another
/// model's) never match.
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    (a.len() == b.len() && !a.is_empty()).then(|| a.iter().zip(b).map(|(x, y)| x * y).sum())
}

/// The best cosine of any of `vectors` against `query`.
pub fn best(query: &[f32], vectors: &[Vec<f32>]) -> Option<f32> {
    vectors
        .iter()
        .filter_map(|v| cosine(query, v))
        .fold(None, |best, c| Some(best.map_or(c, |b: f32| b.max(c))))
}

/// [`best`] straight from [`encode`]d bytes, without decoding them into vectors first
/// (a search scans every vector of a tenant's library); `None` when none has the
/// query's length or the bytes are not [`encode`]'s.
pub fn best_encoded(query: &[f32], mut bytes: &[u8]) -> Option<f32> {
    let mut best: Option<f32> = None;
    while !bytes.is_empty() {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        let body = rest.get(..len.checked_mul(4)?)?;
        if len == query.len() && len > 0 {
            let dot = dot_le(body, query);
            best = Some(best.map_or(dot, |b| b.max(dot)));
        }
        bytes = &rest[len * 4..];
    }
    best
}

/// The dot product of little-endian `f32` bytes with `query` (as long), in eight lanes
/// so the compiler can vectorise it (one running sum is a chain it must keep in order).
fn dot_le(bytes: &[u8], query: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (bytes_8, query_8) = (bytes.chunks_exact(32), query.chunks_exact(8));
    let (bytes_rest, query_rest) = (bytes_8.remainder(), query_8.remainder());
    for (b, q) in bytes_8.zip(query_8) {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let c = &b[i * 4..i * 4 + 4];
            *lane += f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * q[i];
        }
    }
    let rest: f32 = bytes_rest
        .chunks_exact(4)
        .zip(query_rest)
        .map(|(c, q)| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * q)
        .sum();
    lanes.iter().sum::<f32>() + rest
}

/// Vectors as bytes: little-endian `f32`s, one vector after another, each preceded by its
/// length as a little-endian `u32` (what a database row and the embedded index store).
pub fn encode(vectors: &[Vec<f32>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(vectors.iter().map(|v| 4 + 4 * v.len()).sum());
    for v in vectors {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

/// [`encode`]'s inverse; `None` for bytes it did not write.
pub fn decode(mut bytes: &[u8]) -> Option<Vec<Vec<f32>>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        let body = rest.get(..len.checked_mul(4)?)?;
        out.push(
            body.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        );
        bytes = &rest[len * 4..];
    }
    Some(out)
}

/// The simulated provider's embedding: the text's words (as the index analyses them,
/// CJK bigrams included) hashed into [`HASHED_DIMS`] buckets, unit length. Texts that
/// share words point the same way; it stands in for a model on the embedded defaults
/// and in tests, where no embeddings API is configured.
pub fn hashed(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; HASHED_DIMS];
    for word in super::query_words(text) {
        // FNV-1a, stable across processes and versions (std's hasher is not), then
        // splitmix64's finalizer: FNV's low bits alone collide for similar words.
        let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let h = h ^ (h >> 31);
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[(h % HASHED_DIMS as u64) as usize] += sign;
    }
    normalized(v)
}

/// A long text cut into pieces of about `chars` characters at whitespace, at most `max`
/// of them (the rest of a very long transcript is left out: its summary stands for it).
pub fn chunks(text: &str, chars: usize, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        if !current.is_empty() && current.chars().count() + word.chars().count() >= chars {
            out.push(std::mem::take(&mut current));
            if out.len() == max {
                return out;
            }
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() && out.len() < max {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn vectors_survive_their_bytes_and_refuse_foreign_ones() {
        let vs = vec![vec![0.5, -0.25, 1.0], vec![], vec![3.0]];
        assert_eq!(decode(&encode(&vs)), Some(vs));
        assert_eq!(decode(&[1, 0, 0, 0, 9]), None);
        assert_eq!(decode(&[]), Some(vec![]));
    }

    #[test]
    fn shared_words_point_the_same_way_and_other_words_do_not() {
        let a = hashed("Green tea for summer mornings");
        let b = hashed("a summer green tea");
        let c = hashed("carbon bicycle frame");
        let ab = cosine(&a, &b).unwrap();
        let ac = cosine(&a, &c).unwrap();
        assert!(ab > 0.5, "{ab}");
        assert!(ac.abs() < 0.3, "{ac}");
        assert!((cosine(&a, &a).unwrap() - 1.0).abs() < 1e-5);
        assert_eq!(cosine(&a, &[1.0]), None);
        assert_eq!(best(&a, &[c.clone(), b.clone()]), Some(ab));
        assert_eq!(best(&a, &[]), None);
        assert_eq!(best_encoded(&a, &encode(&[c.clone(), b.clone()])), Some(ab));
        assert_eq!(best_encoded(&a, &encode(&[vec![1.0]])), None);
        assert_eq!(best_encoded(&a, &[7, 0, 0, 0, 1]), None);
        assert!(hashed("绿茶 新品").iter().any(|x| *x != 0.0));
    }

    #[test]
    fn chunks_cut_at_words_and_stop_at_the_cap() {
        let text = "one two three four five six seven eight nine ten";
        let parts = chunks(text, 10, 100);
        assert!(parts.iter().all(|p| p.chars().count() <= 14), "{parts:?}");
        assert_eq!(parts.join(" "), text);
        assert_eq!(chunks(text, 10, 2).len(), 2);
        assert!(chunks("   ", 10, 3).is_empty());
    }
}
