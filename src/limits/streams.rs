//! Things held open in this process (live streams, uploads), counted per key (a cap's
//! and a tenant's): a permit per thing, given back when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct Open {
    counts: Arc<Mutex<HashMap<String, u32>>>,
}

impl Open {
    /// A permit if the user has fewer than `cap` open (0: no cap).
    pub fn open(&self, user_id: &str, cap: u32) -> Option<StreamPermit> {
        let mut counts = self.counts.lock().ok()?;
        let n = counts.entry(user_id.to_owned()).or_default();
        if cap > 0 && *n >= cap {
            return None;
        }
        *n += 1;
        Some(StreamPermit {
            counts: self.counts.clone(),
            user_id: user_id.to_owned(),
        })
    }
}

/// One open stream of one user; dropping it closes the count.
pub struct StreamPermit {
    counts: Arc<Mutex<HashMap<String, u32>>>,
    user_id: String,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.counts.lock()
            && let Some(n) = counts.get_mut(&self.user_id)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.user_id);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_counted_per_user_and_given_back() {
        let open = Open::default();
        let a = open.open("u", 2).unwrap();
        let _b = open.open("u", 2).unwrap();
        assert!(open.open("u", 2).is_none());
        assert!(open.open("v", 2).is_some());
        drop(a);
        assert!(open.open("u", 2).is_some());
    }
}
