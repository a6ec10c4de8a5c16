//! Task kinds and statuses: which queue a kind runs on, its steps, and the state names.
//! Both are stored as their names (`copywriting`, `PENDING`) and read back as these enums
//! by the entity itself, so the flow never re-parses a string; `parse` is for the edges
//! (request fields, query strings).

use sea_orm::entity::prelude::{DeriveActiveEnum, EnumIter, StringLen};
use serde::{Deserialize, Serialize};

use super::queues::{
    AI_LONG, AI_MEDIA_ASR, AI_MEDIA_ASR_LONG, AI_MEDIA_EXTRACT, AI_MEDIA_EXTRACT_LONG,
    AI_MEDIA_SUMMARY, AI_MEDIA_VECTORIZE, AI_SHORT,
};
use crate::broker::QueueSpec;
use crate::providers::Wants;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    EnumIter,
    DeriveActiveEnum,
)]
#[serde(rename_all = "snake_case")]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(32))")]
pub enum TaskKind {
    #[sea_orm(string_value = "copywriting")]
    Copywriting,
    #[sea_orm(string_value = "image")]
    Image,
    #[sea_orm(string_value = "video")]
    Video,
    #[sea_orm(string_value = "model3d")]
    Model3d,
    #[sea_orm(string_value = "video_analysis")]
    VideoAnalysis,
}

pub const ALL_KINDS: [TaskKind; 5] = [
    TaskKind::Copywriting,
    TaskKind::Image,
    TaskKind::Video,
    TaskKind::Model3d,
    TaskKind::VideoAnalysis,
];

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Copywriting => "copywriting",
            TaskKind::Image => "image",
            TaskKind::Video => "video",
            TaskKind::Model3d => "model3d",
            TaskKind::VideoAnalysis => "video_analysis",
        }
    }

    pub fn parse(s: &str) -> Option<TaskKind> {
        ALL_KINDS.into_iter().find(|k| k.as_str() == s)
    }

    /// Short kinds never wait behind long ones: they have their own queue. The queue of
    /// a kind's first step.
    pub fn queue(self) -> &'static QueueSpec {
        self.queue_of(0)
    }

    /// The queue of step `step`: the pipeline's stages each have their own.
    pub fn queue_of(self, step: i32) -> &'static QueueSpec {
        self.queue_in(step, Lane::Regular)
    }

    /// The queue of step `step` in `lane`: a long video's extraction and transcription
    /// have queues of their own.
    pub fn queue_in(self, step: i32, lane: Lane) -> &'static QueueSpec {
        match self {
            TaskKind::Copywriting | TaskKind::Image => &AI_SHORT,
            TaskKind::Video | TaskKind::Model3d => &AI_LONG,
            TaskKind::VideoAnalysis => match (step, lane) {
                (0, Lane::Regular) => &AI_MEDIA_EXTRACT,
                (0, Lane::Long) => &AI_MEDIA_EXTRACT_LONG,
                (1, Lane::Regular) => &AI_MEDIA_ASR,
                (1, Lane::Long) => &AI_MEDIA_ASR_LONG,
                (2, _) => &AI_MEDIA_SUMMARY,
                _ => &AI_MEDIA_VECTORIZE,
            },
        }
    }

    /// The steps a task of this kind goes through; each pipeline step is its own message.
    pub fn steps(self) -> &'static [&'static str] {
        match self {
            TaskKind::VideoAnalysis => &[
                "extract_audio",
                "transcribe",
                "summarize",
                "build_knowledge_entry",
            ],
            _ => &["generate"],
        }
    }

    /// Whether the result is text (stored as is) or media (a URL and metadata).
    pub fn is_text(self) -> bool {
        matches!(self, TaskKind::Copywriting | TaskKind::VideoAnalysis)
    }

    /// What step `step` asks of its provider: the pipeline's transcription a transcript,
    /// an image task an image, the rest text (or whatever its provider makes).
    pub fn wants(self, step: &str) -> Wants {
        match (self, step) {
            (_, "transcribe") => Wants::Transcript,
            (TaskKind::Image, _) => Wants::Image,
            _ => Wants::Text,
        }
    }

    /// Whether step `step`'s output gets vectors for a search by meaning: a video's
    /// knowledge entry, embedded by the provider that writes it.
    pub fn vectorized(self, step: &str) -> bool {
        self == TaskKind::VideoAnalysis && step == KNOWLEDGE_STEP
    }
}

/// The video-analysis step that writes the knowledge entry (and its vectors).
pub const KNOWLEDGE_STEP: &str = "build_knowledge_entry";

/// Which queues a task's heavy stages take: a long video's have their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Regular,
    Long,
}

/// The params key the server sets on a long video's task (params starting with `_`
/// are the server's: a submission naming one is refused).
pub const LANE_PARAM: &str = "_lane";

impl Lane {
    /// The lane a task's params (as stored) put it in.
    pub fn of(params: &str) -> Lane {
        // Only the server writes it, so a cheap look before a parse.
        if !params.contains(LANE_PARAM) {
            return Lane::Regular;
        }
        match serde_json::from_str::<serde_json::Value>(params)
            .ok()
            .and_then(|p| {
                p.get(LANE_PARAM)
                    .and_then(|l| l.as_str())
                    .map(str::to_owned)
            })
            .as_deref()
        {
            Some("long") => Lane::Long,
            _ => Lane::Regular,
        }
    }
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    EnumIter,
    DeriveActiveEnum,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[schema(as = TaskStatus)]
pub enum Status {
    #[sea_orm(string_value = "PENDING")]
    Pending,
    #[sea_orm(string_value = "PROCESSING")]
    Processing,
    #[sea_orm(string_value = "RETRYING")]
    Retrying,
    /// The step runs at a provider that answers later (a parked job), or waits for a
    /// person's approval: no worker holds it (see `task_waits`).
    #[sea_orm(string_value = "WAITING")]
    Waiting,
    #[sea_orm(string_value = "SUCCESS")]
    Success,
    #[sea_orm(string_value = "FAILED")]
    Failed,
    #[sea_orm(string_value = "CANCELED")]
    Canceled,
}

impl Status {
    /// The statuses of a task not finished yet: waiting for a consumer or running.
    pub const ACTIVE: [Status; 4] = [
        Status::Pending,
        Status::Processing,
        Status::Retrying,
        Status::Waiting,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Processing => "PROCESSING",
            Status::Retrying => "RETRYING",
            Status::Waiting => "WAITING",
            Status::Success => "SUCCESS",
            Status::Failed => "FAILED",
            Status::Canceled => "CANCELED",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        [
            Status::Pending,
            Status::Processing,
            Status::Retrying,
            Status::Waiting,
            Status::Success,
            Status::Failed,
            Status::Canceled,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Success | Status::Failed | Status::Canceled)
    }
}
