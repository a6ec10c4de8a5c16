//! The search backend's behaviour, the same on the embedded index and on the
//! Elasticsearch adapter against a real OpenSearch 2.19 node: external versions (newest
//! wins in any order, deletes stay deleted), owner and kind filters, Chinese words,
//! highlights, paging.

use conveyor::search::elastic::ElasticIndex;
use conveyor::search::embedded::EmbeddedIndex;
use conveyor::search::{Doc, Op, Outcome, Query, SearchIndex};

use crate::helpers::{opensearch, unique_namespace};

fn doc(id: &str, owner: &str, title: &str, content: &str, version: i64) -> Doc {
    Doc {
        id: id.into(),
        owner: owner.into(),
        kind: "copywriting".into(),
        title: title.into(),
        content: content.into(),
        tags: vec!["spring".into(), "茶".into()],
        created_at: chrono::DateTime::from_timestamp_millis(1_764_000_000_000).unwrap(),
        version,
        vectors: Vec::new(),
    }
}

fn query(owner: &str, text: &str) -> Query {
    Query {
        owner: owner.into(),
        text: text.into(),
        kind: None,
        semantic: None,
        min_score: 0.0,
        offset: 0,
        limit: 10,
    }
}

async fn total(idx: &dyn SearchIndex, q: Query) -> u64 {
    idx.search(&q).await.unwrap().total
}

async fn behaves(idx: &dyn SearchIndex) {
    idx.ping().await.unwrap();
    // Versions: late, repeated and out-of-order writes end at the newest.
    let v3 = Op::Index(doc("m1", "ada", "v3 title", "third", 3));
    let v2 = Op::Index(doc("m1", "ada", "v2 title", "second", 2));
    assert_eq!(idx.bulk(vec![v3.clone()]).await.unwrap(), [Outcome::Done]);
    assert_eq!(
        idx.bulk(vec![v2, v3]).await.unwrap(),
        [Outcome::Stale, Outcome::Stale]
    );
    let v4 = Op::Index(doc("m1", "ada", "v4 title", "fourth", 4));
    let v5 = Op::Index(doc("m1", "ada", "v5 title", "fifth", 5));
    assert_eq!(
        idx.bulk(vec![v5, v4]).await.unwrap(),
        [Outcome::Done, Outcome::Stale]
    );
    let hits = idx.search(&query("ada", "")).await.unwrap();
    assert_eq!(hits.total, 1);
    assert_eq!(
        (hits.hits[0].title.as_str(), hits.hits[0].version),
        ("v5 title", 5)
    );
    // A delete stays: a late update cannot bring the document back.
    let del = Op::Delete {
        id: "m1".into(),
        version: 6,
    };
    assert_eq!(idx.bulk(vec![del]).await.unwrap(), [Outcome::Done]);
    let late = Op::Index(doc("m1", "ada", "late", "late", 5));
    assert_eq!(idx.bulk(vec![late]).await.unwrap(), [Outcome::Stale]);
    assert_eq!(total(idx, query("ada", "")).await, 0);

    // Owners, Chinese, highlights, tags, kinds, paging.
    let ops = vec![
        Op::Index(doc(
            "a1",
            "ada",
            "春季新品",
            "我们的搜索引擎支持中文 and green tea",
            1,
        )),
        Op::Index(doc("a2", "ada", "summer", "iced coffee for the beach", 1)),
        Op::Index(doc("b1", "bob", "春季新品", "我们的搜索引擎 bob's copy", 1)),
    ];
    let done = idx.bulk(ops).await.unwrap();
    assert!(done.iter().all(|o| *o == Outcome::Done), "{done:?}");
    let hits = idx.search(&query("ada", "搜索引擎")).await.unwrap();
    assert_eq!(hits.total, 1, "{hits:?}");
    assert_eq!(hits.hits[0].id, "a1");
    assert!(
        hits.hits[0].highlight.contains("<em>"),
        "{}",
        hits.hits[0].highlight
    );
    assert_eq!(hits.hits[0].tags, ["spring", "茶"]);
    assert_eq!(total(idx, query("ada", "GREEN Tea")).await, 1);
    assert_eq!(total(idx, query("ada", "spring")).await, 2);
    assert_eq!(
        total(idx, query("ada", "bob's")).await,
        0,
        "another owner's words"
    );
    assert_eq!(total(idx, query("bob", "搜索")).await, 1);
    let mut other_kind = query("ada", "");
    other_kind.kind = Some("image".into());
    assert_eq!(total(idx, other_kind).await, 0);
    let mut page = query("ada", "");
    page.limit = 1;
    let first = idx.search(&page).await.unwrap();
    page.offset = 1;
    let second = idx.search(&page).await.unwrap();
    assert_eq!(
        (first.total, first.hits.len(), second.hits.len()),
        (2, 1, 1)
    );
    assert_ne!(first.hits[0].id, second.hits[0].id);
    ranking_ignores_other_tenants(idx).await;
    by_meaning(idx).await;
}

/// A search by meaning ranks the owner's embedded documents by their best vector, keeps
/// to the owner and kind, leaves out documents without vectors and those below the
/// least score, pages, and follows the versions like any write.
async fn by_meaning(idx: &dyn SearchIndex) {
    use conveyor::search::semantic::hashed;
    let with = |id: &str, owner: &str, texts: &[&str]| {
        let mut d = doc(id, owner, "video", texts.join(" ").as_str(), 1);
        d.vectors = texts.iter().map(|t| hashed(t)).collect();
        Op::Index(d)
    };
    let ops = vec![
        with(
            "s1",
            "sem",
            &["matcha latte recipe", "whisk the green powder slowly"],
        ),
        with(
            "s2",
            "sem",
            &["mountain bike review", "carbon frame and disc brakes"],
        ),
        with("s3", "sem", &["green smoothie with spinach"]),
        // Another tenant's near-identical video, and a document with no vectors.
        with("x1", "other", &["matcha latte recipe"]),
        Op::Index(doc(
            "s4",
            "sem",
            "matcha latte recipe",
            "matcha latte recipe",
            1,
        )),
    ];
    let done = idx.bulk(ops).await.unwrap();
    assert!(done.iter().all(|o| *o == Outcome::Done), "{done:?}");
    let near = |owner: &str, text: &str| {
        let mut q = query(owner, "");
        q.semantic = Some(hashed(text));
        q.min_score = 0.1;
        q
    };
    let hits = idx
        .search(&near("sem", "how to make a matcha latte"))
        .await
        .unwrap();
    let ids: Vec<&str> = hits.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["s1"], "{hits:?}");
    let score = hits.hits[0].score.unwrap();
    assert!((0.1..=1.0001).contains(&score), "{score}");
    // A detail said in one chunk finds its video; two videos share "green", best first.
    let hits = idx.search(&near("sem", "green powder")).await.unwrap();
    let ids: Vec<&str> = hits.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["s1", "s3"], "{hits:?}");
    assert!(hits.hits[0].score > hits.hits[1].score);
    assert_eq!(hits.total, 2);
    let mut page = near("sem", "green powder");
    (page.offset, page.limit) = (1, 1);
    let second = idx.search(&page).await.unwrap();
    assert_eq!((second.total, second.hits[0].id.as_str()), (2, "s3"));
    // Nothing near: nothing listed; a lower bar lists everything embedded.
    assert_eq!(total(idx, near("sem", "quarterly tax filing")).await, 0);
    let mut all = near("sem", "quarterly tax filing");
    all.min_score = -1.0;
    assert_eq!(
        total(idx, all).await,
        3,
        "every embedded document, none without vectors"
    );
    let mut other_kind = near("sem", "matcha latte");
    other_kind.kind = Some("image".into());
    assert_eq!(total(idx, other_kind).await, 0);
    // A newer version without the words moves it away.
    let mut v2 = doc("s1", "sem", "video", "tyres", 2);
    v2.vectors = vec![hashed("winter tyres")];
    assert_eq!(
        idx.bulk(vec![Op::Index(v2)]).await.unwrap(),
        [Outcome::Done]
    );
    assert_eq!(total(idx, near("sem", "matcha latte")).await, 0);
    assert_eq!(total(idx, near("other", "matcha latte")).await, 1);
}

/// A tenant's results are ordered newest first with no score, so another tenant
/// indexing the same words (which moves BM25's index-wide statistics) cannot change
/// their order: nothing of other tenants' words can be read from it.
async fn ranking_ignores_other_tenants(idx: &dyn SearchIndex) {
    let at = |ms: i64| chrono::DateTime::from_timestamp_millis(1_764_000_000_000 + ms).unwrap();
    let mut older = doc("c1", "cy", "notes", "green green green green tea", 1);
    older.created_at = at(1_000);
    let mut newer = doc("c2", "cy", "notes", "green tea tea tea tea tea", 1);
    newer.created_at = at(2_000);
    idx.bulk(vec![Op::Index(older), Op::Index(newer)])
        .await
        .unwrap();
    let order =
        |hits: conveyor::search::Hits| hits.hits.into_iter().map(|h| h.id).collect::<Vec<_>>();
    let before = order(idx.search(&query("cy", "green tea")).await.unwrap());
    assert_eq!(before, ["c2", "c1"], "newest first");
    // Another tenant floods the index with one of the words.
    let flood: Vec<Op> = (0..40)
        .map(|i| {
            Op::Index(doc(
                &format!("d{i}"),
                "dee",
                "green",
                "green green green",
                1,
            ))
        })
        .collect();
    idx.bulk(flood).await.unwrap();
    let after = order(idx.search(&query("cy", "green tea")).await.unwrap());
    assert_eq!(
        after, before,
        "another tenant's words moved this tenant's order"
    );
}

#[tokio::test]
async fn the_embedded_index_behaves() {
    let dir = tempfile::tempdir().unwrap();
    let idx = EmbeddedIndex::open(Some(dir.path())).unwrap();
    behaves(&idx).await;
}

#[tokio::test]
async fn the_elasticsearch_adapter_behaves_on_opensearch() {
    let Some(url) = opensearch("the_elasticsearch_adapter_behaves_on_opensearch").await else {
        return;
    };
    let alias = format!("{}-materials", unique_namespace());
    let idx = ElasticIndex::connect(&url, &alias, true).await.unwrap();
    // A second process connecting finds the alias and creates nothing.
    ElasticIndex::connect(&url, &alias, true).await.unwrap();
    behaves(&idx).await;
    idx.drop_all().await.unwrap();
}
