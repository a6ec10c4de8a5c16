//! What only the embedded index has; the behaviour every backend shares is tested in
//! tests/api/search.rs.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::search::Doc;

#[tokio::test]
async fn it_survives_a_reopen_and_takes_any_typed_text() {
    let dir = tempfile::tempdir().unwrap();
    let idx = EmbeddedIndex::open(Some(dir.path())).unwrap();
    let doc = Doc {
        id: "a1".into(),
        owner: "ada".into(),
        kind: "copywriting".into(),
        title: "春季新品".into(),
        content: "green tea 绿茶".into(),
        tags: Vec::new(),
        created_at: DateTime::from_timestamp_millis(0).unwrap(),
        version: 1,
        vectors: vec![crate::search::semantic::hashed("green tea")],
    };
    assert_eq!(
        idx.bulk(vec![Op::Index(doc)]).await.unwrap(),
        [Outcome::Done]
    );
    drop(idx);
    let idx = EmbeddedIndex::open(Some(dir.path())).unwrap();
    let query = |text: &str| Query {
        owner: "ada".into(),
        text: text.into(),
        kind: None,
        semantic: None,
        min_score: 0.0,
        offset: 0,
        limit: 10,
    };
    assert_eq!(idx.search(&query("绿茶")).await.unwrap().total, 1);
    // Query syntax is words: `AND` is a stop word as in the cjk analyzer, `(` nothing,
    // `title:` the word "title", `id:*` the word "id".
    assert_eq!(idx.search(&query("tea AND (")).await.unwrap().total, 1);
    assert_eq!(idx.search(&query("title:")).await.unwrap().total, 0);
    assert_eq!(idx.search(&query("id:*")).await.unwrap().total, 0);
    assert_eq!(idx.search(&query("owner:ada")).await.unwrap().total, 0);
    assert_eq!(idx.search(&query("((( ")).await.unwrap().total, 0);
    // The vectors survive the reopen too.
    let by_meaning = Query {
        semantic: Some(crate::search::semantic::hashed("tea")),
        ..query("")
    };
    let hits = idx.search(&by_meaning).await.unwrap();
    assert_eq!(hits.total, 1);
    assert!(hits.hits[0].score.unwrap() > 0.5);
}
