//! Fair share between plans, as a rule without I/O: how a contended lane's slots divide
//! between the weight classes of the plans waiting in it, max-min fair under their caps
//! ([`allocate`]), and what one more claim of a tenant meets: its plan's cap, or its
//! class's part ([`verdict`]). Whoever claims work applies it with its own counts.

/// What one more claim of a tenant meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Admit,
    /// At its plan's cap.
    OverCap {
        cap: u32,
    },
    /// At its weighted share while others wait.
    OverShare {
        share: u64,
    },
}

/// Divides `slots` among contenders `(weight, cap)` (cap 0: none) by weight, max-min
/// fair: a contender whose part would pass its cap gets the cap, and the rest is divided
/// again among the others.
pub fn allocate(slots: u64, contenders: &[(u32, u32)]) -> Vec<f64> {
    let mut parts = vec![0.0; contenders.len()];
    let mut open: Vec<usize> = (0..contenders.len()).collect();
    let mut left = slots as f64;
    while !open.is_empty() && left > 0.0 {
        let weights: f64 = open
            .iter()
            .map(|&i| f64::from(contenders[i].0.max(1)))
            .sum();
        let part = |i: usize| left * f64::from(contenders[i].0.max(1)) / weights;
        let capped: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&i| contenders[i].1 > 0 && part(i) >= f64::from(contenders[i].1))
            .collect();
        if capped.is_empty() {
            for &i in &open {
                parts[i] = part(i);
            }
            break;
        }
        for &i in &capped {
            parts[i] = f64::from(contenders[i].1);
            left -= parts[i];
        }
        open.retain(|i| !capped.contains(i));
    }
    parts
}

/// The rule for one more claim of a tenant running `running`, with its `cap` (0: none)
/// and its `part` of the lane (`None`: alone in it).
pub fn verdict(running: u64, cap: u32, part: Option<f64>) -> Verdict {
    if cap > 0 && running >= u64::from(cap) {
        return Verdict::OverCap { cap };
    }
    match part {
        // Rounded, at least 1: no tenant waits forever.
        Some(p) if running >= (p.round() as u64).max(1) => Verdict::OverShare {
            share: (p.round() as u64).max(1),
        },
        _ => Verdict::Admit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(slots: u64, contenders: &[(u32, u32)], i: usize) -> u64 {
        (allocate(slots, contenders)[i].round() as u64).max(1)
    }

    #[test]
    fn a_cap_defers_whoever_waits() {
        assert_eq!(verdict(4, 4, None), Verdict::OverCap { cap: 4 });
        assert_eq!(verdict(3, 4, None), Verdict::Admit);
    }

    #[test]
    fn alone_a_tenant_takes_whatever_is_free() {
        assert_eq!(verdict(100, 0, None), Verdict::Admit);
    }

    #[test]
    fn contended_shares_follow_the_weights_and_never_fall_to_zero() {
        // 8 slots, weights 3 and 1: 6 and 2.
        let lane = [(3, 0), (1, 0)];
        assert_eq!((share(8, &lane, 0), share(8, &lane, 1)), (6, 2));
        assert_eq!(verdict(6, 0, Some(6.0)), Verdict::OverShare { share: 6 });
        assert_eq!(verdict(5, 0, Some(6.0)), Verdict::Admit);
        // A light tenant beside a heavy crowd still gets one.
        assert_eq!(share(51, &[(1, 0), (1000, 0)], 0), 1);
        assert_eq!(verdict(0, 0, Some(0.05)), Verdict::Admit);
        assert_eq!(verdict(1, 0, Some(0.05)), Verdict::OverShare { share: 1 });
        // Simulated: two tenants always waiting fill 8 slots 6:2, in either order.
        for first_a in [true, false] {
            let (mut a, mut b) = (0u64, 0u64);
            for i in 0..32 {
                if a + b == 8 {
                    break;
                }
                let parts = allocate((a + b + 1).max(8), &lane);
                if (i % 2 == 0) == first_a {
                    if verdict(a, 0, Some(parts[0])) == Verdict::Admit {
                        a += 1;
                    }
                } else if verdict(b, 0, Some(parts[1])) == Verdict::Admit {
                    b += 1;
                }
            }
            assert_eq!((a, b), (6, 2));
        }
    }

    #[test]
    fn what_a_capped_tenant_cannot_use_goes_to_the_others() {
        // Weight 4 beside weight 1 capped at 1: 7 and 1, no slot left idle.
        let parts = allocate(8, &[(4, 0), (1, 1)]);
        assert_eq!(parts, vec![7.0, 1.0]);
        // Two capped below their parts, the third takes the rest.
        let parts = allocate(12, &[(1, 2), (1, 2), (1, 0)]);
        assert_eq!(parts, vec![2.0, 2.0, 8.0]);
        // Everyone capped: nobody gets more than the cap, what is left stays free.
        let parts = allocate(10, &[(1, 2), (5, 3)]);
        assert_eq!(parts, vec![2.0, 3.0]);
    }
}
