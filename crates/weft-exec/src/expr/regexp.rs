//! POSIX regular expressions as PostgreSQL's advanced regular expressions (AREs) read
//! them: the `~`, `~*`, `!~`, `!~*` operators, `regexp_replace`, `regexp_count`,
//! `regexp_like`, `regexp_substr`, `substring(text FROM pattern)` and `SIMILAR TO`.
//!
//! Matching is done by the `regex` crate. A pattern is first rewritten where the two
//! dialects read the same text differently:
//! - `.` matches a newline unless a newline-sensitive flag is given (`dot_matches_new_line`);
//! - the class shorthands `\d \w \s` are ASCII, as under PostgreSQL's C locale;
//! - `\m \M \y \Y` are the word boundaries (`\b{start}`, `\b{end}`, `\b`, `\B`), `\Z`
//!   is the end of the string and `\b` is a backspace;
//! - back-references (`\1`) have no counterpart and are refused (0A000).
//!
//! Compiled patterns are cached per thread, as PostgreSQL caches its last 32.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use regex::{Captures, Regex, RegexBuilder};
use weft_common::{Datum, Error, Result, SqlState};

use super::ScalarFunction as F;

const INVALID_REGULAR_EXPRESSION: SqlState = SqlState("2201B");
const CACHED_PATTERNS_MAX: usize = 64;

/// How a pattern is compiled: PostgreSQL's option letters after parsing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Options {
    case_insensitive: bool,
    /// `n`/`m`, `p`: `.` and bracket expressions do not match a newline.
    newline_excluded_from_dot: bool,
    /// `n`/`m`, `w`: `^` and `$` also match at newlines.
    anchors_at_newlines: bool,
    /// `x`: whitespace and `#` comments in the pattern are ignored.
    expanded: bool,
    /// `q`: the pattern is a literal string.
    literal: bool,
    /// `g`: every match, not only the first (regexp_replace only).
    global: bool,
}

/// Reads the option letters of `flags`; `function` names the caller in PostgreSQL's
/// error for a `g` where it has no meaning.
fn parse_options(flags: &str, allow_global: Option<&str>) -> Result<Options> {
    let mut options = Options::default();
    for c in flags.chars() {
        match c {
            'g' => match allow_global {
                None => options.global = true,
                Some(function) => {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("{function}() does not support the \"global\" option"),
                    ))
                }
            },
            'i' => options.case_insensitive = true,
            'c' => options.case_insensitive = false,
            'n' | 'm' => {
                options.newline_excluded_from_dot = true;
                options.anchors_at_newlines = true;
            }
            's' => {
                options.newline_excluded_from_dot = false;
                options.anchors_at_newlines = false;
            }
            'p' => {
                options.newline_excluded_from_dot = true;
                options.anchors_at_newlines = false;
            }
            'w' => {
                options.newline_excluded_from_dot = false;
                options.anchors_at_newlines = true;
            }
            'x' => options.expanded = true,
            't' => options.expanded = false,
            'q' => options.literal = true,
            'b' | 'e' => {
                return Err(Error::not_supported(format!("regular expression option \"{c}\" is not supported")))
            }
            other => {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("invalid regular expression option: \"{other}\""),
                ))
            }
        }
    }
    Ok(options)
}

thread_local! {
    static COMPILED: RefCell<HashMap<(String, Options), Arc<Regex>>> = RefCell::new(HashMap::new());
}

/// The compiled form of `pattern` under `options`, from the cache when it is there.
fn compile(pattern: &str, options: Options) -> Result<Arc<Regex>> {
    let key = (pattern.to_string(), Options { global: false, ..options });
    if let Some(found) = COMPILED.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(found);
    }
    let translated = if options.literal { regex::escape(pattern) } else { translate(pattern)? };
    let compiled = RegexBuilder::new(&translated)
        .case_insensitive(options.case_insensitive)
        .dot_matches_new_line(!options.newline_excluded_from_dot)
        .multi_line(options.anchors_at_newlines)
        .ignore_whitespace(options.expanded)
        .size_limit(64 << 20)
        .build()
        .map_err(|e| {
            let reason = match e {
                regex::Error::CompiledTooBig(_) => "regular expression is too complex".to_string(),
                regex::Error::Syntax(text) => {
                    let reason = text.lines().last().unwrap_or("syntax error").trim().trim_start_matches("error: ");
                    // PostgreSQL's wording for the mistakes both engines name alike.
                    match reason {
                        r if r.contains("unclosed group") || r.contains("unopened group") => {
                            "parentheses () not balanced".to_string()
                        }
                        r if r.contains("unclosed character class") => "brackets [] not balanced".to_string(),
                        r if r.contains("repetition operator missing expression") => {
                            "quantifier operand invalid".to_string()
                        }
                        r if r.contains("repetition quantifier") || r.contains("unclosed counted repetition") => {
                            "invalid repetition count(s)".to_string()
                        }
                        r => r.to_string(),
                    }
                }
                _ => "invalid pattern".to_string(),
            };
            Error::new(INVALID_REGULAR_EXPRESSION, format!("invalid regular expression: {reason}"))
        })?;
    let compiled = Arc::new(compiled);
    COMPILED.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() >= CACHED_PATTERNS_MAX {
            cache.clear();
        }
        cache.insert(key, compiled.clone());
    });
    Ok(compiled)
}

/// Rewrites an ARE into the `regex` crate's syntax (see the module comment).
fn translate(pattern: &str) -> Result<String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_bracket = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    return Err(Error::new(
                        INVALID_REGULAR_EXPRESSION,
                        "invalid regular expression: invalid escape \\ sequence",
                    ));
                };
                let class = |inside: bool, name: char| -> &'static str {
                    match (inside, name) {
                        (false, 'd') => "[0-9]",
                        (false, 'D') => "[^0-9]",
                        (false, 'w') => "[0-9A-Za-z_]",
                        (false, 'W') => "[^0-9A-Za-z_]",
                        (false, 's') => "[ \\t\\n\\r\\x0B\\x0C]",
                        (false, 'S') => "[^ \\t\\n\\r\\x0B\\x0C]",
                        (true, 'd') => "0-9",
                        (true, 'w') => "0-9A-Za-z_",
                        (_, _) => " \\t\\n\\r\\x0B\\x0C",
                    }
                };
                match next {
                    'd' | 'w' | 's' => out.push_str(class(in_bracket, next)),
                    'D' | 'W' | 'S' if !in_bracket => out.push_str(class(false, next)),
                    'D' | 'W' | 'S' => {
                        return Err(Error::new(
                            INVALID_REGULAR_EXPRESSION,
                            "invalid regular expression: invalid escape \\ sequence",
                        ))
                    }
                    'm' if !in_bracket => out.push_str("\\b{start}"),
                    'M' if !in_bracket => out.push_str("\\b{end}"),
                    'y' if !in_bracket => out.push_str("\\b"),
                    'Y' if !in_bracket => out.push_str("\\B"),
                    'A' if !in_bracket => out.push_str("\\A"),
                    'Z' if !in_bracket => out.push_str("\\z"),
                    'b' => out.push_str("\\x08"),
                    '1'..='9' if !in_bracket => {
                        return Err(Error::not_supported(
                            "back-references in regular expressions are not supported",
                        ))
                    }
                    'n' | 't' | 'r' | 'f' | 'v' | 'x' | 'u' | 'U' | 'e' | 'a' | '0' => {
                        out.push('\\');
                        out.push(next);
                    }
                    c if c.is_ascii_alphanumeric() => {
                        return Err(Error::new(
                            INVALID_REGULAR_EXPRESSION,
                            "invalid regular expression: invalid escape \\ sequence",
                        ))
                    }
                    // An escaped punctuation mark or other character is itself.
                    other => out.push_str(&regex::escape(&other.to_string())),
                }
            }
            '[' if !in_bracket => {
                in_bracket = true;
                out.push('[');
                // A leading `^` negates, and a `]` right after the opening (or the `^`)
                // is a literal member.
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().unwrap_or('^'));
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                    out.push_str("\\]");
                }
            }
            '[' => {
                // `[:alpha:]`, `[.x.]` and `[=x=]` inside a bracket expression.
                if let Some(&kind @ (':' | '.' | '=')) = chars.peek() {
                    let mut name = String::new();
                    chars.next();
                    let mut closed = false;
                    while let Some(ch) = chars.next() {
                        if ch == kind && chars.peek() == Some(&']') {
                            chars.next();
                            closed = true;
                            break;
                        }
                        name.push(ch);
                    }
                    if !closed {
                        return Err(Error::new(
                            INVALID_REGULAR_EXPRESSION,
                            "invalid regular expression: brackets [] not balanced",
                        ));
                    }
                    match kind {
                        ':' => {
                            out.push_str("[:");
                            out.push_str(&name);
                            out.push_str(":]");
                        }
                        _ => out.push_str(&regex::escape(&name)),
                    }
                } else {
                    out.push_str("\\[");
                }
            }
            ']' if in_bracket => {
                in_bracket = false;
                out.push(']');
            }
            // Characters the `regex` crate treats as set operators inside brackets.
            '&' | '~' | '-' if in_bracket && chars.peek() == Some(&c) => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
    }
    if in_bracket {
        return Err(Error::new(INVALID_REGULAR_EXPRESSION, "invalid regular expression: brackets [] not balanced"));
    }
    Ok(out)
}

/// The byte offset of the `start`th character (1-based); `None` past the end.
fn byte_offset_of_char(s: &str, start: i32) -> Result<Option<usize>> {
    if start <= 0 {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"start\": {start}"),
        ));
    }
    let skip = (start - 1) as usize;
    Ok(s.char_indices().map(|(i, _)| i).chain(std::iter::once(s.len())).nth(skip))
}

fn text_arg(d: &Datum) -> Result<&str> {
    match d {
        Datum::Text(s) => Ok(s),
        other => Err(Error::internal(format!("regular expression argument {other:?}"))),
    }
}

fn int_arg(d: &Datum) -> Result<i32> {
    match d {
        Datum::Int4(v) => Ok(*v),
        other => Err(Error::internal(format!("regular expression argument {other:?}"))),
    }
}

pub(super) fn call(func: F, args: &[Datum]) -> Result<Datum> {
    match func {
        F::RegexMatch | F::RegexIMatch | F::RegexNotMatch | F::RegexNotIMatch => {
            let [text, pattern] = args else { return Err(Error::internal("regex operator arity")) };
            let case_insensitive = matches!(func, F::RegexIMatch | F::RegexNotIMatch);
            let options = Options { case_insensitive, ..Options::default() };
            let matched = compile(text_arg(pattern)?, options)?.is_match(text_arg(text)?);
            Ok(Datum::Bool(matched != matches!(func, F::RegexNotMatch | F::RegexNotIMatch)))
        }
        F::SimilarTo | F::NotSimilarTo => {
            let [text, pattern, rest @ ..] = args else { return Err(Error::internal("SIMILAR TO arity")) };
            let escape = match rest {
                [escape] => Some(text_arg(escape)?),
                _ => None,
            };
            let translated = similar_to_regex(text_arg(pattern)?, escape)?;
            let matched = compile(&translated, Options::default())?.is_match(text_arg(text)?);
            Ok(Datum::Bool(matched != (func == F::NotSimilarTo)))
        }
        F::RegexpLike => {
            let flags = match args.get(2) {
                Some(f) => text_arg(f)?,
                None => "",
            };
            let options = parse_options(flags, Some("regexp_like"))?;
            Ok(Datum::Bool(compile(text_arg(&args[1])?, options)?.is_match(text_arg(&args[0])?)))
        }
        F::RegexpCount => {
            let text = text_arg(&args[0])?;
            let start = args.get(2).map(int_arg).transpose()?.unwrap_or(1);
            let flags = match args.get(3) {
                Some(f) => text_arg(f)?,
                None => "",
            };
            let options = parse_options(flags, Some("regexp_count"))?;
            let regex = compile(text_arg(&args[1])?, options)?;
            let count = match byte_offset_of_char(text, start)? {
                Some(from) => count_matches(&regex, text, from),
                None => 0,
            };
            Ok(Datum::Int4(i32::try_from(count).map_err(|_| Error::out_of_range("integer"))?))
        }
        F::RegexpSubstr => {
            let text = text_arg(&args[0])?;
            let start = args.get(2).map(int_arg).transpose()?.unwrap_or(1);
            let nth = args.get(3).map(int_arg).transpose()?.unwrap_or(1);
            let flags = match args.get(4) {
                Some(f) => text_arg(f)?,
                None => "",
            };
            let group = args.get(5).map(int_arg).transpose()?.unwrap_or(0);
            if nth <= 0 {
                return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"n\": {nth}")));
            }
            if group < 0 {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("invalid value for parameter \"subexpr\": {group}"),
                ));
            }
            let options = parse_options(flags, Some("regexp_substr"))?;
            let regex = compile(text_arg(&args[1])?, options)?;
            let Some(from) = byte_offset_of_char(text, start)? else { return Ok(Datum::Null) };
            let found = matches_from(&regex, text, from).into_iter().nth((nth - 1) as usize);
            Ok(found
                .and_then(|caps| caps.get(group as usize).map(|m| Datum::Text(m.as_str().to_string())))
                .unwrap_or(Datum::Null))
        }
        F::SubstringPattern => {
            let (text, pattern) = (text_arg(&args[0])?, text_arg(&args[1])?);
            let regex = compile(pattern, Options::default())?;
            let Some(caps) = regex.captures(text) else { return Ok(Datum::Null) };
            // With a parenthesized subexpression, its text (NULL when it took no part).
            let wanted = if regex.captures_len() > 1 { caps.get(1) } else { caps.get(0) };
            Ok(wanted.map_or(Datum::Null, |m| Datum::Text(m.as_str().to_string())))
        }
        F::RegexpReplace => regexp_replace(args),
        _ => Err(Error::internal(format!("{}() is not a regular expression function", func.name()))),
    }
}

/// Matches from byte `from` on, without overlap, as PostgreSQL walks them: each search
/// starts where the last match ended, one character further after an empty match, so an
/// empty match right after a non-empty one counts (`'aaa'` has two matches of `a*`).
fn matches_from<'t>(regex: &Regex, text: &'t str, from: usize) -> Vec<Captures<'t>> {
    let mut found = Vec::new();
    let mut at = from;
    while at <= text.len() {
        let Some(caps) = regex.captures_at(text, at) else { break };
        let whole = caps.get(0).expect("group 0 always participates");
        at = if whole.is_empty() {
            whole.end() + text[whole.end()..].chars().next().map_or(1, char::len_utf8)
        } else {
            whole.end()
        };
        found.push(caps);
    }
    found
}

fn count_matches(regex: &Regex, text: &str, from: usize) -> usize {
    matches_from(regex, text, from).len()
}

/// `regexp_replace(source, pattern, replacement [, start [, n]] [, flags])`.
fn regexp_replace(args: &[Datum]) -> Result<Datum> {
    let source = text_arg(&args[0])?;
    let pattern = text_arg(&args[1])?;
    let replacement = text_arg(&args[2])?;
    // (text, text, text, text flags) or (text, text, text, int start [, int n [, text flags]])
    let (start, nth, flags) = match &args[3..] {
        [] => (1, None, ""),
        [Datum::Text(flags)] => (1, None, flags.as_str()),
        [start] => (int_arg(start)?, None, ""),
        [start, n] => (int_arg(start)?, Some(int_arg(n)?), ""),
        [start, n, flags] => (int_arg(start)?, Some(int_arg(n)?), text_arg(flags)?),
        _ => return Err(Error::internal("regexp_replace arity")),
    };
    if let Some(n) = nth {
        if n < 0 {
            return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"n\": {n}")));
        }
    }
    let options = parse_options(flags, None)?;
    let regex = compile(pattern, options)?;
    let Some(from) = byte_offset_of_char(source, start)? else {
        return Ok(Datum::Text(source.to_string()));
    };
    // Which matches to replace: the nth only, every one (n = 0 or the g flag without n),
    // or the first.
    let replace_all = nth == Some(0) || (nth.is_none() && options.global);
    let only = if replace_all { None } else { Some(nth.unwrap_or(1) as usize) };
    let mut out = String::with_capacity(source.len());
    out.push_str(&source[..from]);
    let mut copied_to = from;
    for (i, caps) in matches_from(&regex, source, from).into_iter().enumerate() {
        let whole = caps.get(0).expect("group 0 always participates");
        if only.is_some_and(|n| i + 1 < n) {
            continue;
        }
        out.push_str(&source[copied_to..whole.start()]);
        expand_replacement(replacement, &caps, &mut out);
        copied_to = whole.end();
        if only.is_some() {
            break;
        }
    }
    out.push_str(&source[copied_to..]);
    Ok(Datum::Text(out))
}

/// The replacement text with `\1`..`\9` (a group, empty when it took no part), `\&`
/// (the whole match) and `\\` (a backslash); any other backslash is kept as it is.
fn expand_replacement(replacement: &str, caps: &Captures<'_>, out: &mut String) {
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some(d @ '1'..='9') => {
                chars.next();
                let group = d as usize - '0' as usize;
                if let Some(m) = caps.get(group) {
                    out.push_str(m.as_str());
                }
            }
            Some('&') => {
                chars.next();
                out.push_str(caps.get(0).map_or("", |m| m.as_str()));
            }
            Some('\\') => {
                chars.next();
                out.push('\\');
            }
            _ => out.push('\\'),
        }
    }
}

/// SQL's `SIMILAR TO` pattern as an anchored ARE (PostgreSQL's `similar_to_escape`):
/// `%` is `.*`, `_` is `.`, `|*+?{}()[]` keep their regex meaning, other regex
/// metacharacters are literal, and the escape character (default `\`) makes the next
/// character literal.
pub(super) fn similar_to_regex(pattern: &str, escape: Option<&str>) -> Result<String> {
    let escape = match escape {
        None => Some('\\'),
        Some("") => None,
        Some(e) if e.chars().count() == 1 => e.chars().next(),
        Some(_) => {
            return Err(Error::new(SqlState("22025"), "invalid escape string")
                .with_hint("Escape string must be empty or one character."))
        }
    };
    let mut out = String::from("^(?:");
    let mut chars = pattern.chars();
    let mut in_bracket = false;
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            match chars.next() {
                Some(next) => out.push_str(&regex::escape(&next.to_string())),
                None => {
                    return Err(Error::new(SqlState("22025"), "invalid escape string")
                        .with_hint("Escape string must be empty or one character."))
                }
            }
            continue;
        }
        match c {
            '[' if !in_bracket => {
                in_bracket = true;
                out.push('[');
            }
            ']' if in_bracket => {
                in_bracket = false;
                out.push(']');
            }
            _ if in_bracket => {
                if matches!(c, '\\' | '&' | '~' | '[') {
                    out.push('\\');
                }
                out.push(c);
            }
            '%' => out.push_str(".*"),
            '_' => out.push('.'),
            '|' | '*' | '+' | '?' | '{' | '}' | ')' => out.push(c),
            '(' => out.push_str("(?:"),
            other => out.push_str(&regex::escape(&other.to_string())),
        }
    }
    out.push_str(")$");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Datum {
        Datum::Text(s.to_string())
    }

    fn matches(text: &str, pattern: &str) -> bool {
        call(F::RegexMatch, &[t(text), t(pattern)]).unwrap() == Datum::Bool(true)
    }

    #[test]
    fn are_syntax_is_translated() {
        assert!(matches("a\nb", "a.b"));
        assert!(matches("foo bar", "\\mbar"));
        assert!(!matches("foobar", "\\mbar"));
        assert!(matches("x9", "[[:alpha:]]\\d"));
        assert!(!matches("é", "\\w"));
        assert!(matches("a]b", "[]a]+b"));
        assert!(call(F::RegexMatch, &[t("aa"), t("(a)\\1")]).is_err());
    }

    #[test]
    fn replace_expands_groups_and_flags() {
        let r = |args: &[Datum]| regexp_replace(args).unwrap();
        assert_eq!(r(&[t("abcabc"), t("b"), t("X")]), t("aXcabc"));
        assert_eq!(r(&[t("abcabc"), t("b"), t("X"), t("g")]), t("aXcaXc"));
        assert_eq!(r(&[t("abcabc"), t("(b)(c)"), t("<\\2\\1\\&\\\\>"), t("g")]), t("a<cbbc\\>a<cbbc\\>"));
        assert_eq!(r(&[t("ABC"), t("b"), t("x"), t("i")]), t("AxC"));
        assert_eq!(r(&[t("abcabc"), t("b"), t("X"), Datum::Int4(1), Datum::Int4(2)]), t("abcaXc"));
        assert_eq!(r(&[t("aaa"), t("a*"), t("X"), t("g")]), t("XX"));
        assert_eq!(r(&[t("abc"), t("x*"), t("-"), t("g")]), t("-a-b-c-"));
        assert!(regexp_replace(&[t("a"), t("a"), t("b"), t("z")]).is_err());
    }

    #[test]
    fn similar_to_is_anchored() {
        let similar = |text: &str, pattern: &str| {
            call(F::SimilarTo, &[t(text), t(pattern)]).unwrap() == Datum::Bool(true)
        };
        assert!(similar("abc", "a%"));
        assert!(!similar("xabc", "a%"));
        assert!(similar("abc", "(a|x)_c"));
        assert!(similar("a.c", "a.c"));
        assert!(!similar("abc", "a.c"));
        assert!(similar("a%", "a\\%"));
    }
}
