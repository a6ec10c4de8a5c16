//! The caller's account, organisations, invitations and the admins' view of a tenant
//! (`crate::account`), with what the configuration and the build decide in its document
//! (the plans an admin may choose, the limits an override may name).

use std::sync::Arc;

use axum::Router;
use utoipa::OpenApi as _;

use crate::account;
use crate::contract::{DocContext, Feature, Serving};
use crate::platform::Platform;

pub const ACCOUNT: Feature = Feature::new("account")
    .serve(serve)
    .openapi(account::Doc::openapi)
    .configured_openapi(documented);

fn serve(platform: &Platform, serving: &Serving) -> anyhow::Result<Router> {
    Ok(account::routes(account::Account {
        core: serving.core.clone(),
        auth: Arc::new(platform.settings.auth.clone()),
    }))
}

fn documented(build: &DocContext<'_>, doc: &mut utoipa::openapi::OpenApi) {
    let plans = crate::plans::Plans::new(&build.settings.plans);
    account::documented(&plans, build.limits, doc);
}
