//! The configured providers by name, built once per process from `[ai.providers.*]`
//! ([`Providers::connect`], on the platform): their gates hold the fleet's rate limits,
//! pauses and slots, so every part of the process that calls a provider (a step of a
//! task, the query of a search by meaning) goes through the same ones.

use std::collections::HashMap;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use super::settings::{Protocol, ProviderSettings, ProvidersSettings};
use super::{ExecError, Provider, dify, ffmpeg, gate, openai, prediction, simulated, vectorize};
use crate::plans::Plans;
use crate::search::semantic::Embedder;
use crate::settings::Settings;
use crate::storage::Storage;

/// Every configured provider, by its `[ai.providers]` name. Cheap to clone.
#[derive(Clone, Default)]
pub struct Providers {
    by_name: Arc<HashMap<String, Provider>>,
}

impl Providers {
    /// The providers of `settings`, their gates shared through Redis when the dedupe
    /// store is Redis (the real fleet) and a provider calls out, else in this process.
    pub async fn connect(
        settings: &Settings,
        db: DatabaseConnection,
        storage: Arc<Storage>,
        plans: Arc<Plans>,
    ) -> anyhow::Result<Providers> {
        let s = ProvidersSettings::from_settings(settings)?;
        let gates = if s.providers.values().any(|p| p.protocol.calls_out()) {
            gate::Gates::connect(&settings.dedupe).await?
        } else {
            Arc::new(gate::Gates::local())
        };
        Self::build(&s, db, storage, gates, plans)
    }

    /// The providers of `s` on `gates`.
    pub fn build(
        s: &ProvidersSettings,
        db: DatabaseConnection,
        storage: Arc<Storage>,
        gates: Arc<gate::Gates>,
        plans: Arc<Plans>,
    ) -> anyhow::Result<Providers> {
        let gate = |name: &str, p: &ProviderSettings| {
            gates
                .gate(name, p.requests_per_minute, p.tokens_per_minute)
                .with_fleet_cap(p.fleet_max_concurrent)
        };
        let mut by_name = HashMap::new();
        for (name, p) in &s.providers {
            // Every provider's 429 count is on /metrics from the first scrape (an alert
            // rule's rate over it has a series to read before the first storm).
            metrics::counter!("conveyor_provider_rate_limited_total", "provider" => name.clone())
                .increment(0);
            let exec: Arc<dyn super::Executor> = match p.protocol {
                Protocol::Simulated => {
                    Arc::new(simulated::Simulated::new(&s.simulation, storage.clone()))
                }
                Protocol::Openai => {
                    Arc::new(openai::OpenAi::new(p, gate(name, p), storage.clone())?)
                }
                Protocol::Dify => Arc::new(dify::Dify::new(p, gate(name, p))?),
                Protocol::Ffmpeg => Arc::new(ffmpeg::Ffmpeg::new(
                    p,
                    db.clone(),
                    storage.clone(),
                    plans.clone(),
                )),
                Protocol::Replicate | Protocol::Prediction => Arc::new(
                    prediction::Prediction::new(p, gate(name, p), storage.clone())?,
                ),
            };
            by_name.insert(name.clone(), Provider::new(name, exec));
        }
        Ok(Providers {
            by_name: Arc::new(by_name),
        })
    }

    /// Provider `name`, if configured.
    pub fn get(&self, name: &str) -> Option<&Provider> {
        self.by_name.get(name)
    }

    /// Provider `name`; a step that names one not configured fails for good.
    pub fn named(&self, name: &str) -> Result<&Provider, ExecError> {
        self.get(name)
            .ok_or_else(|| ExecError::Permanent(format!("no provider {name:?} in [ai.providers]")))
    }

    /// The embeddings of a search by meaning's query, by provider `name` (the one whose
    /// model embedded what is searched); `None` if no provider has that name.
    pub fn embeddings(&self, name: &str) -> Option<Arc<dyn Embedder>> {
        let provider = self.get(name)?.clone();
        Some(Arc::new(vectorize::QueryEmbedder(provider)))
    }
}
