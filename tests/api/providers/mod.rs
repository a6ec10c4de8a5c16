//! Real providers against wire-faithful fakes: the OpenAI-compatible adapter's streams,
//! images, error classes and fleet limits; Dify workflows; streamed copywriting end to end (deltas live, in order,
//! resumable; a cut stream's retry preceded by a reset; cancel stops the stream); credits by
//! the token and the usage report.

mod dify;
mod fake_dify;
mod fake_openai;
mod fake_openai_media;
mod openai;
mod openai_media;
mod pricing;
mod streaming;
