//! Credits by the token (`[ai.kinds.<kind>.pricing]`), on top of the kind's flat `cost`.
//! The submit reserves the most a task can cost: its flat cost plus, per step, the
//! prompt's bytes and `input_allowance` as input tokens (a byte-level tokenizer never
//! makes more tokens than bytes) and `max_output_tokens` (sent to the provider as
//! `max_tokens`, so the model cannot write more). Success charges the flat cost plus the
//! tokens the provider reported, never more than the reservation, and gives the rest
//! back in the same transaction.

use serde::{Deserialize, Serialize};

/// `[ai.kinds.<kind>.pricing]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenPricing {
    /// Credits per 1,000 input (prompt) tokens.
    #[serde(default)]
    pub per_1k_input: i64,
    /// Credits per 1,000 output (completion) tokens; also the price of tokens a provider
    /// reports only as a total (Dify).
    #[serde(default)]
    pub per_1k_output: i64,
    /// The most output tokens a step may produce.
    pub max_output_tokens: u32,
    /// Input tokens reserved per step beyond the prompt's bytes: the system message and
    /// the chat template.
    #[serde(default = "input_allowance")]
    pub input_allowance: u32,
}

fn input_allowance() -> u32 {
    256
}

/// Token counts of a task (its steps added up), as its providers reported them.
pub use crate::providers::usage::Tokens;

/// How a kind is priced: its flat cost and, optionally, its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    pub flat: i64,
    pub tokens: Option<TokenPricing>,
}

impl Price {
    /// The credits a task of `steps` steps with this prompt reserves at submit.
    pub fn reserve(&self, prompt: &str, steps: usize) -> i64 {
        let Some(p) = self.tokens else {
            return self.flat;
        };
        let steps = steps.max(1) as i64;
        let input = (prompt.len() as i64).saturating_add(i64::from(p.input_allowance));
        let output = i64::from(p.max_output_tokens);
        let most = Tokens {
            input: input.saturating_mul(steps),
            output: output.saturating_mul(steps),
            total: (input + output).saturating_mul(steps),
        };
        self.flat.saturating_add(p.price(most))
    }

    /// What a task that reserved `reserved` and used `used` is charged.
    pub fn charge(&self, used: Tokens, reserved: i64) -> i64 {
        match self.tokens {
            None => reserved,
            Some(p) => self.flat.saturating_add(p.price(used)).clamp(0, reserved),
        }
    }
}

impl TokenPricing {
    /// Credits for `t`, rounded up to a whole credit.
    pub fn price(&self, t: Tokens) -> i64 {
        let unsplit = (t.total - t.input - t.output).max(0);
        let milli = t.input.saturating_mul(self.per_1k_input).saturating_add(
            t.output
                .saturating_add(unsplit)
                .saturating_mul(self.per_1k_output),
        );
        milli.saturating_add(999) / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price() -> Price {
        Price {
            flat: 1,
            tokens: Some(TokenPricing {
                per_1k_input: 2,
                per_1k_output: 8,
                max_output_tokens: 1000,
                input_allowance: 0,
            }),
        }
    }

    #[test]
    fn reserves_the_most_and_charges_what_was_used() {
        let p = price();
        // 1 flat + 500 bytes × 2/1k (1) + 1000 × 8/1k (8) = 10.
        assert_eq!(p.reserve(&"x".repeat(500), 1), 10);
        assert_eq!(p.reserve(&"x".repeat(500), 2), 19);
        let used = Tokens {
            input: 12,
            output: 30,
            total: 42,
        };
        // 24 + 240 milli-credits: 1 credit (rounded up) + 1 flat.
        assert_eq!(p.charge(used, 10), 2);
        // Never more than the reservation.
        let huge = Tokens {
            input: 0,
            output: 1_000_000,
            total: 1_000_000,
        };
        assert_eq!(p.charge(huge, 10), 10);
        // A bare total is priced as output.
        let dify = Tokens {
            input: 0,
            output: 0,
            total: 500,
        };
        assert_eq!(p.charge(dify, 10), 5);
        let flat = Price {
            flat: 4,
            tokens: None,
        };
        assert_eq!((flat.reserve("abc", 1), flat.charge(used, 4)), (4, 4));
    }
}
