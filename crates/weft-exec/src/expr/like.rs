//! `LIKE` / `ILIKE` pattern matching (PostgreSQL's `like.c` semantics, written anew).
//!
//! `%` matches any sequence of characters, `_` exactly one character, and the escape
//! character (backslash unless `ESCAPE` names another; `ESCAPE ''` turns escaping off)
//! makes the next pattern character literal. The match covers the whole string. Text is
//! UTF-8, so `_` consumes one character, not one byte; literal pattern characters are
//! compared byte by byte, which is the same thing for valid UTF-8.
//!
//! `ILIKE` folds ASCII letters only, as PostgreSQL does under the C collation.

use weft_common::{Error, Result, SqlState};

const INVALID_ESCAPE: SqlState = SqlState("22025");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Byte(u8),
    AnyChar,
    AnySequence,
    /// An escape character that ends the pattern: an error only if matching reaches it
    /// with text left, as in PostgreSQL (`'a' LIKE 'a\'` is false, `'ab' LIKE 'a\'` fails).
    DanglingEscape,
}

/// A pattern ready to match: literal segments between `%`s, or a token list when a
/// segment holds `_` (then matching backtracks).
#[derive(Debug)]
pub struct LikePattern {
    tokens: Vec<Token>,
    case_insensitive: bool,
}

impl LikePattern {
    /// Parses `pattern` with `escape` (`None`: the default backslash; `Some("")`: none).
    pub fn new(pattern: &str, escape: Option<&str>, case_insensitive: bool) -> Result<LikePattern> {
        let escape: Option<char> = match escape {
            None => Some('\\'),
            Some(e) => {
                let mut chars = e.chars();
                match (chars.next(), chars.next()) {
                    (None, _) => None,
                    (Some(c), None) => Some(c),
                    _ => {
                        return Err(Error::new(INVALID_ESCAPE, "invalid escape string")
                            .with_hint("Escape string must be empty or one character."))
                    }
                }
            }
        };
        let mut tokens = Vec::with_capacity(pattern.len());
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if Some(c) == escape {
                match chars.next() {
                    Some(literal) => push_char(&mut tokens, literal, case_insensitive),
                    None => tokens.push(Token::DanglingEscape),
                }
            } else if c == '%' {
                // Consecutive `%`s are one.
                if tokens.last() != Some(&Token::AnySequence) {
                    tokens.push(Token::AnySequence);
                }
            } else if c == '_' {
                tokens.push(Token::AnyChar);
            } else {
                push_char(&mut tokens, c, case_insensitive);
            }
        }
        Ok(LikePattern { tokens, case_insensitive })
    }

    pub fn matches(&self, text: &str) -> Result<bool> {
        if self.case_insensitive && text.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.matches_bytes(text.to_ascii_lowercase().as_bytes());
        }
        self.matches_bytes(text.as_bytes())
    }

    fn matches_bytes(&self, text: &[u8]) -> Result<bool> {
        if !self.tokens.iter().any(|t| matches!(t, Token::AnyChar | Token::DanglingEscape)) {
            return Ok(match_segments(&self.tokens, text));
        }
        match_backtracking(&self.tokens, text)
    }
}

fn push_char(tokens: &mut Vec<Token>, c: char, case_insensitive: bool) {
    let c = if case_insensitive { c.to_ascii_lowercase() } else { c };
    let mut buf = [0u8; 4];
    tokens.extend(c.encode_utf8(&mut buf).bytes().map(Token::Byte));
}

/// Patterns of literals and `%` only: the first segment is a prefix, the last a suffix,
/// and the ones between are found leftmost-first (taking the leftmost occurrence never
/// loses a match, because what follows may start anywhere after it).
fn match_segments(tokens: &[Token], text: &[u8]) -> bool {
    let segments: Vec<Vec<u8>> = tokens
        .split(|t| *t == Token::AnySequence)
        .map(|s| s.iter().map(|t| if let Token::Byte(b) = t { *b } else { 0 }).collect())
        .collect();
    if segments.len() == 1 {
        return text == segments[0].as_slice();
    }
    let (first, rest) = segments.split_first().expect("split yields one segment at least");
    let (last, middle) = rest.split_last().expect("two segments at least");
    if !text.starts_with(first) {
        return false;
    }
    let mut at = first.len();
    for segment in middle {
        match find(&text[at..], segment) {
            Some(i) => at += i + segment.len(),
            None => return false,
        }
    }
    text.len() - at >= last.len() && text.ends_with(last)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    let first = needle[0];
    let mut from = 0;
    while from + needle.len() <= haystack.len() {
        let i = from + haystack[from..=haystack.len() - needle.len()].iter().position(|&b| b == first)?;
        if &haystack[i..i + needle.len()] == needle {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// The general case: walk pattern and text together; on a mismatch go back to the last
/// `%` and let it swallow one more character. Linear in practice, O(n·m) at worst.
fn match_backtracking(tokens: &[Token], text: &[u8]) -> Result<bool> {
    let (mut t, mut p) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < tokens.len() {
            match tokens[p] {
                Token::AnySequence => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                Token::AnyChar if t < text.len() => {
                    t += utf8_len(text[t]);
                    p += 1;
                    continue;
                }
                Token::Byte(b) if t < text.len() && text[t] == b => {
                    t += 1;
                    p += 1;
                    continue;
                }
                Token::DanglingEscape if t < text.len() => {
                    return Err(Error::new(INVALID_ESCAPE, "LIKE pattern must not end with escape character"));
                }
                _ => {}
            }
        } else if t == text.len() {
            return Ok(true);
        }
        match star {
            Some((star_p, star_t)) if star_t < text.len() => {
                let next = star_t + utf8_len(text[star_t]);
                star = Some((star_p, next));
                p = star_p + 1;
                t = next;
            }
            _ => return Ok(false),
        }
    }
}

/// Length of the UTF-8 sequence a lead byte starts (1 for a stray continuation byte).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn like(text: &str, pattern: &str) -> bool {
        LikePattern::new(pattern, None, false).unwrap().matches(text).unwrap()
    }

    #[test]
    fn postgres_examples() {
        assert!(like("abc", "abc"));
        assert!(like("abc", "a%"));
        assert!(like("abc", "_b_"));
        assert!(!like("abc", "c"));
        assert!(like("", "%"));
        assert!(!like("", "_"));
        assert!(like("a%c", "a\\%c"));
        assert!(!like("abc", "a\\%c"));
        assert!(like("héllo", "h_llo"));
        assert!(like("xxabcabcyy", "%abc%yy"));
        assert!(!like("abab", "%aba%b%a"));
        assert!(LikePattern::new("A%", None, true).unwrap().matches("abc").unwrap());
        assert!(LikePattern::new("a#%", Some("#"), false).unwrap().matches("a%").unwrap());
        assert!(LikePattern::new("a\\", Some(""), false).unwrap().matches("a\\").unwrap());
        assert!(!like("a", "a\\"));
        assert!(LikePattern::new("a\\", None, false).unwrap().matches("ab").is_err());
        assert!(LikePattern::new("a", Some("ab"), false).is_err());
    }

    /// A naive recursive matcher over characters: the oracle.
    fn oracle(text: &[char], pattern: &[char]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some(('%', rest)) => (0..=text.len()).any(|i| oracle(&text[i..], rest)),
            Some(('_', rest)) => !text.is_empty() && oracle(&text[1..], rest),
            Some((c, rest)) => text.first() == Some(c) && oracle(&text[1..], rest),
        }
    }

    proptest! {
        #[test]
        fn agrees_with_naive_matcher(text in "[ab\u{e9}]{0,8}", pattern in "[ab\u{e9}%_]{0,6}") {
            let t: Vec<char> = text.chars().collect();
            let p: Vec<char> = pattern.chars().collect();
            prop_assert_eq!(like(&text, &pattern), oracle(&t, &p));
        }
    }
}
