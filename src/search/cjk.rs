//! A tokenizer for mixed Chinese/Japanese/Korean and Latin text, in the manner of the
//! `cjk` analyzer of Elasticsearch/OpenSearch: runs of CJK characters become overlapping
//! bigrams (`搜索引擎` → `搜索 索引 引擎`; a lone character stays a unigram), other
//! letters and digits become lowercased words. Without it a run of Chinese is one token
//! and no word inside a sentence can be found.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Registered as [`NAME`] on the index.
#[derive(Clone, Default)]
pub struct CjkTokenizer;

pub const NAME: &str = "cjk_bigram";

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3400..=0x4DBF   // CJK Extension A
        | 0x4E00..=0x9FFF   // CJK Unified Ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0xF900..=0xFAFF   // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F // Extensions B-F, compatibility supplement
    )
}

/// The tokens of `text` (byte offsets into it).
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    let mut push = |from: usize, to: usize, text: String| {
        let position = out.len();
        out.push(Token {
            offset_from: from,
            offset_to: to,
            position,
            text,
            position_length: 1,
        });
    };
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |i: usize| chars.get(i + 1).map_or(text.len(), |(at, _)| *at);
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if is_cjk(c) {
            let start = i;
            while i < chars.len() && is_cjk(chars[i].1) {
                i += 1;
            }
            if i - start == 1 {
                push(at, end_of(start), c.to_string());
            } else {
                for (j, (from, _)) in chars.iter().enumerate().take(i - 1).skip(start) {
                    let (from, to) = (*from, end_of(j + 1));
                    push(from, to, text[from..to].to_owned());
                }
            }
        } else if c.is_alphanumeric() {
            let start = i;
            while i < chars.len() && chars[i].1.is_alphanumeric() && !is_cjk(chars[i].1) {
                i += 1;
            }
            let (from, to) = (chars[start].0, end_of(i - 1));
            push(from, to, text[from..to].to_lowercase());
        } else {
            i += 1;
        }
    }
    out
}

pub struct CjkTokenStream {
    tokens: Vec<Token>,
    next: usize,
}

impl TokenStream for CjkTokenStream {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

impl Tokenizer for CjkTokenizer {
    type TokenStream<'a> = CjkTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CjkTokenStream {
        CjkTokenStream {
            tokens: tokens(text),
            next: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tokens;

    fn texts(s: &str) -> Vec<String> {
        tokens(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn chinese_runs_become_bigrams_and_words_stay_words() {
        assert_eq!(
            texts("我们的搜索引擎"),
            ["我们", "们的", "的搜", "搜索", "索引", "引擎"]
        );
        assert_eq!(texts("Green 茶 sale"), ["green", "茶", "sale"]);
        assert_eq!(
            texts("春季新品TEA上市!"),
            ["春季", "季新", "新品", "tea", "上市"]
        );
        assert!(texts("  ,. ").is_empty());
        for t in tokens("春季 Tea") {
            let s = "春季 Tea";
            assert_eq!(s[t.offset_from..t.offset_to].to_lowercase(), t.text);
        }
    }
}
