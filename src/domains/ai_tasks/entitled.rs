//! What a plan entitles to: the kinds it may submit (a submission and a retry both ask).

use super::kinds::TaskKind;
use crate::error::ApiError;

/// 403 `plan_required` unless the caller's plan includes `kind`.
pub fn plan_allows(
    plans: &crate::plans::Plans,
    standing: &crate::plans::Standing,
    kind: TaskKind,
) -> Result<(), ApiError> {
    if plans.get(&standing.plan).allows(kind.as_str()) {
        return Ok(());
    }
    let allowing = plans.allowing(kind.as_str());
    Err(ApiError::plan_required(
        format!(
            "the {} plan does not include {} tasks; plans that do: {}",
            standing.plan,
            kind.as_str(),
            allowing.join(", ")
        ),
        standing.plan.clone(),
        allowing,
    ))
}
