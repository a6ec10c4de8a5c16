//! The OpenAI-compatible clients the media pipeline uses, against the fake: a
//! transcription comes back with its text and duration, embeddings in input order
//! whatever order the answer lists them, and their failures are classed like chat's (a
//! 5xx transient, a refusal or a bad file permanent).

use std::sync::Arc;

use bytes::Bytes;
use conveyor::providers::ExecError;
use conveyor::providers::gate::Gates;
use conveyor::providers::openai::OpenAi;
use tokio_util::sync::CancellationToken;

use super::fake_openai;
use super::fake_openai_media::{seconds_of, vector_of};

fn adapter(url: &str, dir: &std::path::Path) -> OpenAi {
    let s = super::openai::settings(url, 1000);
    let storage = super::openai::storage(dir);
    OpenAi::new(&s, Arc::new(Gates::local()).gate("media", 0, 0), storage).unwrap()
}

#[tokio::test]
async fn transcriptions_and_embeddings_come_back_whole_and_their_errors_are_classed() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _fake) = fake_openai::start(0).await;
    let openai = adapter(&url, dir.path());
    let cancel = CancellationToken::new();

    let audio = Bytes::from(vec![7u8; 96_000]);
    let t = openai
        .transcribe(audio.clone(), "clip.wav", Some("en"), &cancel)
        .await
        .unwrap();
    assert_eq!(t.text, "transcript of clip.wav by whisper-1");
    assert_eq!(t.seconds, Some(seconds_of(96_000)));
    assert_eq!(t.model, "whisper-1");
    let boom = openai.transcribe(audio, "boom.wav", None, &cancel).await;
    assert!(matches!(boom, Err(ExecError::Transient(_))), "{boom:?}");
    let empty = openai
        .transcribe(Bytes::new(), "empty.wav", None, &cancel)
        .await;
    assert!(matches!(empty, Err(ExecError::Permanent(_))), "{empty:?}");

    let inputs: Vec<String> = ["a", "bb bb", "the third input"].map(str::to_owned).into();
    let e = openai.embed(&inputs, &cancel).await.unwrap();
    let expected: Vec<Vec<f32>> = inputs.iter().map(|i| vector_of(i)).collect();
    assert_eq!(
        e.vectors, expected,
        "placed by index, not by the answer's order"
    );
    assert_eq!(e.prompt_tokens, 1 + 2 + 4);
    assert_eq!(e.model, "text-embedding-3-small");
    let refused = openai.embed(&["please refuse".to_owned()], &cancel).await;
    assert!(
        matches!(refused, Err(ExecError::Permanent(_))),
        "{refused:?}"
    );
    assert!(openai.embed(&[], &cancel).await.unwrap().vectors.is_empty());
}
