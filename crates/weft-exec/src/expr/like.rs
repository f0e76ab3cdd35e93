//! `LIKE` / `ILIKE` pattern matching (PostgreSQL's `like.c` semantics, written anew).
//!
//! `%` matches any sequence of characters, `_` exactly one character, and the escape
//! character (backslash unless `ESCAPE` names another; `ESCAPE ''` turns escaping off)
//! makes the next pattern character literal. The match covers the whole string. Text is
//! UTF-8, so `_` consumes one character, not one byte; literal pattern characters are
//! compared byte by byte, which is the same thing for valid UTF-8.
//!
//! `ILIKE` folds ASCII letters only, as PostgreSQL does under the C collation.

use std::cell::RefCell;
use std::rc::Rc;

use memchr::memmem::Finder;
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
    /// A pattern of literals and `%` only, split at its `%`s once (see [`match_segments`]).
    segments: Option<Segments>,
}

/// The literal segments of a pattern without `_`: `first` must start the text and `last`
/// end it, `middle` are found in between, leftmost first, by substring search. `whole`
/// when there is no `%` at all (`first` is then the entire pattern).
#[derive(Debug)]
struct Segments {
    whole: bool,
    first: Vec<u8>,
    middle: Vec<Finder<'static>>,
    last: Vec<u8>,
}

impl Segments {
    fn of(tokens: &[Token]) -> Option<Segments> {
        if tokens.iter().any(|t| matches!(t, Token::AnyChar | Token::DanglingEscape)) {
            return None;
        }
        let mut segments: Vec<Vec<u8>> = tokens
            .split(|t| *t == Token::AnySequence)
            .map(|s| s.iter().map(|t| if let Token::Byte(b) = t { *b } else { 0 }).collect())
            .collect();
        if segments.len() == 1 {
            return Some(Segments { whole: true, first: segments.pop()?, middle: Vec::new(), last: Vec::new() });
        }
        let last = segments.pop()?;
        let first = segments.remove(0);
        let middle = segments.iter().map(|s| Finder::new(s).into_owned()).collect();
        Some(Segments { whole: false, first, middle, last })
    }
}

/// Compiled patterns kept per thread (a scan evaluates one pattern for every row): the
/// pattern, its escape and case folding, and the compiled form.
type CachedPattern = (String, Option<String>, bool, Rc<LikePattern>);

thread_local! {
    static COMPILED: RefCell<Vec<CachedPattern>> = const { RefCell::new(Vec::new()) };
}

/// How many patterns a thread keeps compiled.
const CACHED_PATTERNS_MAX: usize = 16;

/// [`LikePattern::new`], from this thread's cache when the same pattern was compiled
/// before.
pub fn compiled(pattern: &str, escape: Option<&str>, case_insensitive: bool) -> Result<Rc<LikePattern>> {
    let found = COMPILED.with(|c| {
        c.borrow()
            .iter()
            .find(|(p, e, ci, _)| p == pattern && e.as_deref() == escape && *ci == case_insensitive)
            .map(|(_, _, _, compiled)| compiled.clone())
    });
    if let Some(compiled) = found {
        return Ok(compiled);
    }
    let compiled = Rc::new(LikePattern::new(pattern, escape, case_insensitive)?);
    COMPILED.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() >= CACHED_PATTERNS_MAX {
            cache.remove(0);
        }
        cache.push((pattern.to_string(), escape.map(str::to_string), case_insensitive, compiled.clone()));
    });
    Ok(compiled)
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
        let segments = Segments::of(&tokens);
        Ok(LikePattern { tokens, case_insensitive, segments })
    }

    pub fn matches(&self, text: &str) -> Result<bool> {
        if self.case_insensitive && text.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.matches_bytes(text.to_ascii_lowercase().as_bytes());
        }
        self.matches_bytes(text.as_bytes())
    }

    fn matches_bytes(&self, text: &[u8]) -> Result<bool> {
        match &self.segments {
            Some(segments) => Ok(match_segments(segments, text)),
            None => match_backtracking(&self.tokens, text),
        }
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
fn match_segments(segments: &Segments, text: &[u8]) -> bool {
    if segments.whole {
        return text == segments.first.as_slice();
    }
    // An empty prefix or suffix (`%x%`) is not compared at all: a call to `bcmp` per row.
    if !segments.first.is_empty() && !text.starts_with(&segments.first) {
        return false;
    }
    let mut at = segments.first.len();
    for finder in &segments.middle {
        match finder.find(&text[at..]) {
            Some(i) => at += i + finder.needle().len(),
            None => return false,
        }
    }
    segments.last.is_empty() || (text.len() - at >= segments.last.len() && text.ends_with(&segments.last))
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

    /// The per-thread cache tells patterns apart by escape and case folding too.
    #[test]
    fn cached_patterns_keep_their_escape_and_case() {
        let m = |text: &str, pattern: &str, escape: Option<&str>, ci: bool| compiled(pattern, escape, ci).unwrap().matches(text).unwrap();
        assert!(m("a%", "a#%", Some("#"), false));
        assert!(!m("a%", "a#%", None, false));
        assert!(m("a#xyz", "a#%", None, false));
        assert!(m("ABC", "a%c", None, true));
        assert!(!m("ABC", "a%c", None, false));
        assert!(m("ab%", "ab\\%", None, false));
        for i in 0..(2 * CACHED_PATTERNS_MAX) {
            let pattern = format!("%{i}%");
            assert!(m(&format!("x{i}y"), &pattern, None, false));
            assert!(!m("xy", &pattern, None, false));
        }
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

        /// Longer texts and patterns of literals and `%` (the substring search path).
        #[test]
        fn segments_agree_with_naive_matcher(text in "[abc]{0,40}", pattern in "[abc%]{0,9}") {
            let t: Vec<char> = text.chars().collect();
            let p: Vec<char> = pattern.chars().collect();
            prop_assert_eq!(like(&text, &pattern), oracle(&t, &p));
        }
    }
}
