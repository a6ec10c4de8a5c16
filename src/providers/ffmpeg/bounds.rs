//! How much one extraction may write, and the refusals. A few kilobytes of container
//! can declare seconds and decode to hours (issue 55: 48,760 bytes of Matroska became
//! 230 MB of WAV), so the output is bounded before FFmpeg runs, not measured after:
//!
//! - the **budget**: the fewer of `max_output_mib` and the room left in the owner's
//!   storage quota; a file whose declared length alone would not fit is refused before
//!   FFmpeg starts, and FFmpeg is killed when its scratch output passes it;
//! - the **length**: the audio is cut at the declared length plus a little slack (and at
//!   what the budget holds); audio that runs past the declaration is a container that
//!   lies about itself, refused.

use super::args::AUDIO_BYTES_PER_SEC;
use crate::providers::ExecError;

/// Seconds of slack over the declared length: 1 s and 1 % (a last audio frame past the
/// container's duration, rounding in its timestamps).
pub fn slack(declared_s: f64) -> f64 {
    1.0 + declared_s * 0.01
}

/// What bounds the budget, and so which refusal passing it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `ai.providers.ffmpeg.max_output_mib`.
    Output,
    /// The owner's storage quota (what is left of it).
    Quota,
}

/// Bytes one extraction may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    pub limit: Limit,
    /// The owner's quota and what they held when the budget was set (for the message).
    pub quota: u64,
    pub used: u64,
}

impl Budget {
    pub fn new(max_output: u64, quota: u64, used: u64) -> Self {
        let room = quota.saturating_sub(used);
        let (bytes, limit) = if room < max_output {
            (room, Limit::Quota)
        } else {
            (max_output, Limit::Output)
        };
        Budget {
            bytes,
            limit,
            quota,
            used,
        }
    }

    /// Seconds of extracted audio that fit.
    pub fn secs(&self) -> f64 {
        self.bytes as f64 / AUDIO_BYTES_PER_SEC as f64
    }

    /// The refusal for an extraction of `wanted` bytes (more than the budget holds).
    pub fn refuse(&self, wanted: u64) -> Refused {
        match self.limit {
            Limit::Output => Refused::OutputTooLarge {
                wanted,
                max: self.bytes,
            },
            Limit::Quota => Refused::StorageQuota {
                wanted,
                quota: self.quota,
                used: self.used,
            },
        }
    }
}

/// Why an extraction was refused: the input's fault, so the task fails (permanent, its
/// credits back). Each message starts with the code a tenant reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    #[error(
        "storage_quota: storing the extraction's {wanted} bytes would take the owner past their storage quota of {quota} bytes ({used} used)"
    )]
    StorageQuota { wanted: u64, quota: u64, used: u64 },
    #[error(
        "output_too_large: the extraction would write {wanted} bytes, more than the {max} one extraction may (ai.providers.ffmpeg.max_output_mib)"
    )]
    OutputTooLarge { wanted: u64, max: u64 },
    #[error(
        "media_unreadable: the file declares {declared_s:.3} s but its audio runs past {decoded_s:.3} s"
    )]
    LengthMismatch { declared_s: f64, decoded_s: f64 },
}

impl From<Refused> for ExecError {
    fn from(r: Refused) -> Self {
        ExecError::Permanent(r.to_string())
    }
}

/// The plan of one extraction: how long its audio may run, or why it may not run at all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// The input's declared length (0: it declares none).
    pub declared_s: f64,
    /// Where the audio is cut (`-t`): the declared length and its slack, within the
    /// budget.
    pub max_secs: f64,
    pub budget: Budget,
}

impl Plan {
    /// Refused before FFmpeg runs when the declared length's audio alone would not fit
    /// the budget. A file that declares no length is cut at what the budget holds.
    pub fn of(declared_s: f64, budget: Budget) -> Result<Self, Refused> {
        let declared_s = if declared_s.is_finite() {
            declared_s.max(0.0)
        } else {
            0.0
        };
        let wanted = (declared_s * AUDIO_BYTES_PER_SEC as f64) as u64;
        if wanted > budget.bytes {
            return Err(budget.refuse(wanted));
        }
        let max_secs = if declared_s > 0.0 {
            (declared_s + slack(declared_s)).min(budget.secs())
        } else {
            budget.secs()
        };
        Ok(Plan {
            declared_s,
            max_secs,
            budget,
        })
    }

    /// Checks the audio FFmpeg wrote (`bytes` in all): audio past the declared length
    /// (beyond half the slack) is a lying container; audio of a file that declares no
    /// length which filled the budget was cut by it. (Whether what was written fits the
    /// quota is the reservation's to say, when it is stored.)
    pub fn check_audio(&self, bytes: u64) -> Result<(), Refused> {
        let decoded_s = bytes as f64 / AUDIO_BYTES_PER_SEC as f64;
        if self.declared_s > 0.0 {
            if decoded_s > self.declared_s + slack(self.declared_s) / 2.0 {
                return Err(Refused::LengthMismatch {
                    declared_s: self.declared_s,
                    decoded_s,
                });
            }
            return Ok(());
        }
        // Within a quarter second of the cut: there was more.
        if decoded_s >= self.budget.secs() - 0.25 {
            return Err(self.budget.refuse(bytes));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_budget_is_the_fewer_of_the_output_cap_and_the_room_left_in_the_quota() {
        let b = Budget::new(1024 * MIB, 21 * MIB, 20 * MIB);
        assert_eq!((b.bytes, b.limit), (MIB, Limit::Quota));
        let b = Budget::new(10 * MIB, 100 * MIB, 0);
        assert_eq!((b.bytes, b.limit), (10 * MIB, Limit::Output));
        // Over the quota already: no room at all.
        assert_eq!(Budget::new(10 * MIB, 5 * MIB, 6 * MIB).bytes, 0);
    }

    #[test]
    fn a_declared_length_that_does_not_fit_is_refused_before_ffmpeg_runs() {
        // 2 hours declared (230 MB of WAV), 21 MB of quota.
        let quota = Budget::new(1024 * MIB, 21 * MIB, 0);
        let r = Plan::of(7200.0, quota).unwrap_err();
        assert!(matches!(r, Refused::StorageQuota { .. }), "{r}");
        assert!(r.to_string().starts_with("storage_quota: "));
        let cap = Budget::new(10 * MIB, 1 << 40, 0);
        let r = Plan::of(7200.0, cap).unwrap_err();
        assert!(r.to_string().starts_with("output_too_large: "), "{r}");
        // What fits runs, cut at its length and the slack.
        let p = Plan::of(5.0, quota).unwrap();
        assert!((p.max_secs - 6.05).abs() < 1e-9, "{p:?}");
        // No declared length: cut at what the budget holds.
        let p = Plan::of(0.0, quota).unwrap();
        assert!((p.max_secs - quota.secs()).abs() < 1e-9);
        assert_eq!(Plan::of(f64::NAN, quota).unwrap().declared_s, 0.0);
    }

    #[test]
    fn audio_past_its_declared_length_or_filling_the_budget_is_refused() {
        let quota = Budget::new(1024 * MIB, 21 * MIB, 0);
        let p = Plan::of(2.0, quota).unwrap();
        let secs = |s: f64| (s * AUDIO_BYTES_PER_SEC as f64) as u64;
        assert_eq!(p.check_audio(secs(2.0) + 78), Ok(()));
        // Declares 2 s, decoded to the cut (3.02 s): the container lies.
        let r = p.check_audio(secs(3.02)).unwrap_err();
        assert!(r.to_string().starts_with("media_unreadable: "), "{r}");
        // An honest file whose length just fits the room left is not refused here.
        let tight = Budget::new(1024 * MIB, secs(5.1), 0);
        let p = Plan::of(5.0, tight).unwrap();
        assert!((p.max_secs - 5.1).abs() < 1e-3, "{p:?}");
        assert_eq!(p.check_audio(secs(5.0) + 78), Ok(()));
        // No declared length, and the audio filled the room left: refused by the quota.
        let p = Plan::of(0.0, quota).unwrap();
        let r = p.check_audio(quota.bytes).unwrap_err();
        assert!(matches!(r, Refused::StorageQuota { .. }), "{r}");
        assert_eq!(p.check_audio(secs(60.0)), Ok(()));
        let e: ExecError = r.into();
        assert!(matches!(e, ExecError::Permanent(m) if m.starts_with("storage_quota: ")));
    }
}
