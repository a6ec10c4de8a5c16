//! A search by meaning in Elasticsearch/OpenSearch: an exact `script_score` run only on
//! the owner's documents. The vectors are a `binary` field with doc values (the bytes of
//! [`crate::search::semantic::encode`], base64 in the document): the script reads them
//! from the column store instead of parsing `_source`, which is what makes an exact scan
//! of a tenant's library affordable (see `cargo bench --bench semantic`). It needs no
//! plugin, so it runs on the same engines as the rest of the adapter (OpenSearch's k-NN
//! plugin and Elasticsearch's `dense_vector` are the approximate, index-wide
//! alternative).

use base64::Engine as _;
use serde_json::{Value, json};

use crate::search::Query;
use crate::search::semantic::encode;

/// Painless: the best cosine of the document's unit vectors with the query's (unit
/// too), plus one so that every score is positive as the engine requires; 0 for a
/// document without vectors of the query's length. Each vector is its length (u32) and
/// its values (f32), little-endian.
const SCRIPT: &str = "
int le(byte[] b, int o) { return (b[o] & 255) | ((b[o + 1] & 255) << 8) | ((b[o + 2] & 255) << 16) | ((b[o + 3] & 255) << 24); }
if (doc['vectors'].size() == 0) { return 0.0; }
def r = doc['vectors'].value; byte[] b = r.bytes; int o = r.offset; int end = r.offset + r.length;
double best = -2.0;
while (o + 4 <= end) {
  int n = le(b, o); o += 4;
  if (n != params.q.length) { o += 4 * n; continue; }
  double dot = 0.0;
  for (int i = 0; i < n; i++) { dot += Float.intBitsToFloat(le(b, o)) * params.q[i]; o += 4; }
  if (dot > best) { best = dot; }
}
return best < -1.5 ? 0.0 : best + 1.0;
";

/// The `vectors` field of the mapping.
pub(super) fn mapping() -> Value {
    json!({ "type": "binary", "doc_values": true })
}

/// The field's value in a document.
pub(super) fn field(vectors: &[Vec<f32>]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(encode(vectors)))
}

/// The search body: `filter` (owner, kind) first, then the script on what is left.
pub(super) fn body(q: &Query, vector: &[f32], filter: Vec<Value>) -> Value {
    json!({
        "from": q.offset, "size": q.limit.max(1), "track_total_hits": true,
        "_source": { "excludes": ["vectors"] },
        // A document without vectors scores 0: never listed, whatever the least score.
        "min_score": (f64::from(q.min_score) + 1.0).max(1e-6),
        "query": { "script_score": {
            "query": { "bool": { "filter": filter } },
            "script": { "source": SCRIPT, "params": { "q": vector } },
        } },
        "sort": [ { "_score": { "order": "desc" } }, { "created_at": { "order": "desc" } } ],
    })
}

/// A hit's cosine (its score less the one the script added).
pub(super) fn score(hit: &Value) -> Option<f32> {
    hit["_score"].as_f64().map(|s| (s - 1.0) as f32)
}
