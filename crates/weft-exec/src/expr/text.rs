//! Text functions in characters (not bytes), as PostgreSQL's with a UTF-8 database:
//! `replace`, `strpos`, `left`, `right`, `btrim`/`ltrim`/`rtrim`, `reverse`, `lpad`/`rpad`,
//! `split_part`, `starts_with`, `initcap`, `octet_length`, `bit_length`, `chr`, `ascii`,
//! `translate`, `to_hex`, `quote_ident`, `quote_literal`, `overlay`; and the functions
//! of any arguments that read their arguments' output text: `concat`, `concat_ws`,
//! `format`, `num_nulls`, `num_nonnulls`, `quote_nullable`.

use weft_common::{Datum, Error, Result, SqlState};

use super::functions::VALUE_SIZE_BYTES_MAX;
use super::ScalarFunction as F;

pub(super) fn call(func: F, args: &[Datum]) -> Result<Datum> {
    let text = |s: String| Ok(Datum::Text(s));
    match (func, args) {
        (F::Replace, [Datum::Text(s), Datum::Text(from), Datum::Text(to)]) => {
            text(if from.is_empty() { s.clone() } else { s.replace(from.as_str(), to) })
        }
        (F::StrPos, [Datum::Text(s), Datum::Text(needle)]) => {
            let position = s.find(needle.as_str()).map_or(0, |byte| s[..byte].chars().count() + 1);
            Ok(Datum::Int4(i32::try_from(position).map_err(|_| Error::out_of_range("integer"))?))
        }
        (F::Left, [Datum::Text(s), Datum::Int4(n)]) => text(left(s, *n)),
        (F::Right, [Datum::Text(s), Datum::Int4(n)]) => text(right(s, *n)),
        (F::BTrim | F::LTrim | F::RTrim, [Datum::Text(s), rest @ ..]) => {
            let set: Vec<char> = match rest {
                [Datum::Text(chars)] => chars.chars().collect(),
                _ => vec![' '],
            };
            let strip = |c: char| set.contains(&c);
            text(match func {
                F::BTrim => s.trim_matches(strip),
                F::LTrim => s.trim_start_matches(strip),
                _ => s.trim_end_matches(strip),
            }
            .to_string())
        }
        (F::Reverse, [Datum::Text(s)]) => text(s.chars().rev().collect()),
        (F::LPad | F::RPad, [Datum::Text(s), Datum::Int4(length), rest @ ..]) => {
            let fill = match rest {
                [Datum::Text(fill)] => fill.as_str(),
                _ => " ",
            };
            pad(s, *length, fill, func == F::LPad).map(Datum::Text)
        }
        (F::SplitPart, [Datum::Text(s), Datum::Text(delimiter), Datum::Int4(n)]) => split_part(s, delimiter, *n).map(Datum::Text),
        (F::StartsWith, [Datum::Text(s), Datum::Text(prefix)]) => Ok(Datum::Bool(s.starts_with(prefix.as_str()))),
        (F::Initcap, [Datum::Text(s)]) => text(initcap(s)),
        (F::OctetLength, [Datum::Text(s)]) => length_i32(s.len()),
        (F::BitLength, [Datum::Text(s)]) => length_i32(s.len().saturating_mul(8)),
        (F::Chr, [Datum::Int4(code)]) => chr(*code).map(|c| Datum::Text(c.to_string())),
        (F::Ascii, [Datum::Text(s)]) => Ok(Datum::Int4(s.chars().next().map_or(0, |c| c as i32))),
        (F::Translate, [Datum::Text(s), Datum::Text(from), Datum::Text(to)]) => text(translate(s, from, to)),
        // Negative values print as their two's complement, as C's unsigned conversion.
        (F::ToHex, [Datum::Int4(v)]) => text(format!("{:x}", *v as u32)),
        (F::ToHex, [Datum::Int8(v)]) => text(format!("{:x}", *v as u64)),
        (F::QuoteIdent, [Datum::Text(s)]) => text(quote_ident(s)),
        (F::QuoteLiteral, [Datum::Text(s)]) => text(quote_literal(s)),
        (F::Overlay, [Datum::Text(s), Datum::Text(placing), Datum::Int4(from), rest @ ..]) => {
            let count = match rest {
                [Datum::Int4(count)] => *count,
                _ => length_i32(placing.chars().count()).map(|_| placing.chars().count() as i32)?,
            };
            overlay(s, placing, *from, count).map(Datum::Text)
        }
        _ => Err(Error::internal(format!("{}() called with unresolved arguments {args:?}", func.name()))),
    }
}

fn length_i32(n: usize) -> Result<Datum> {
    Ok(Datum::Int4(i32::try_from(n).map_err(|_| Error::out_of_range("integer"))?))
}

/// Each run of letters and digits with its first letter upper-case and the rest lower-case
/// (ASCII, as under the C locale).
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        out.push(if in_word { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() });
        in_word = c.is_ascii_alphanumeric();
    }
    out
}

/// `chr(code)`: the character with that code point.
fn chr(code: i32) -> Result<char> {
    if code < 0 {
        return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "character number must be positive"));
    }
    if code == 0 {
        return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "null character not permitted"));
    }
    if code > 0x10FFFF {
        return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, format!("requested character too large for encoding: {code}")));
    }
    char::from_u32(code as u32)
        .ok_or_else(|| Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, format!("requested character not valid for encoding: {code}")))
}

/// `translate(s, from, to)`: each character of `from` becomes the one at the same place in
/// `to`, or is dropped when `to` is shorter; the first occurrence in `from` counts.
fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|&f| f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

/// `overlay(s PLACING r FROM start FOR count)`: `s` with `count` characters from `start`
/// replaced by `r`.
fn overlay(s: &str, placing: &str, start: i32, count: i32) -> Result<String> {
    if start <= 0 {
        return Err(Error::new(SqlState("22011"), "negative substring length not allowed"));
    }
    let after = start.checked_add(count).ok_or_else(|| Error::new(SqlState("22011"), "integer out of range"))?;
    let mut out = super::functions::substr(s, 1, Some(start - 1))?;
    out.push_str(placing);
    out.push_str(&super::functions::substr(s, after, None)?);
    Ok(out)
}

/// Words that `quote_ident` must quote even when they are written in lower case: the
/// keywords PostgreSQL's grammar does not accept as plain column names.
const KEYWORDS_NEEDING_QUOTES: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization", "between",
    "bigint", "binary", "bit", "boolean", "both", "case", "cast", "char", "character", "check", "coalesce",
    "collate", "collation", "column", "concurrently", "constraint", "create", "cross", "current_catalog",
    "current_date", "current_role", "current_schema", "current_time", "current_timestamp", "current_user", "dec",
    "decimal", "default", "deferrable", "desc", "distinct", "do", "else", "end", "except", "exists", "extract",
    "false", "fetch", "float", "for", "foreign", "freeze", "from", "full", "grant", "greatest", "group",
    "grouping", "having", "ilike", "in", "initially", "inner", "inout", "int", "integer", "intersect",
    "interval", "into", "is", "isnull", "join", "lateral", "leading", "least", "left", "like", "limit",
    "localtime", "localtimestamp", "national", "natural", "nchar", "none", "normalize", "not", "notnull", "null",
    "nullif", "numeric", "offset", "on", "only", "or", "order", "out", "outer", "overlaps", "overlay", "placing",
    "position", "precision", "primary", "real", "references", "returning", "right", "row", "select",
    "session_user", "setof", "similar", "smallint", "some", "substring", "symmetric", "table", "tablesample",
    "then", "time", "timestamp", "to", "trailing", "treat", "trim", "true", "union", "unique", "user", "using",
    "values", "varchar", "variadic", "verbose", "when", "where", "window", "with", "xmlattributes", "xmlconcat",
    "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize",
    "xmltable",
];

/// An identifier as SQL would have to write it: unchanged when it is lower-case letters,
/// digits and underscores not starting with a digit, and not a keyword; else in double
/// quotes with inner quotes doubled.
pub(super) fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !KEYWORDS_NEEDING_QUOTES.contains(&s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// A string literal: quotes doubled; with a backslash, an `E'...'` literal with the
/// backslashes doubled.
pub(super) fn quote_literal(s: &str) -> String {
    let body = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

/// The functions of any number of arguments of any type (not strict: each decides what
/// a NULL means).
pub(super) fn call_variadic(func: F, args: &[Datum]) -> Result<Datum> {
    let text_of = |d: &Datum| d.to_pg_text();
    match func {
        F::Concat => Ok(Datum::Text(args.iter().filter_map(text_of).collect())),
        F::ConcatWs => {
            let Some((separator, values)) = args.split_first() else {
                return Err(Error::internal("concat_ws without arguments"));
            };
            let Some(separator) = text_of(separator) else { return Ok(Datum::Null) };
            Ok(Datum::Text(values.iter().filter_map(text_of).collect::<Vec<_>>().join(&separator)))
        }
        F::NumNulls => Ok(Datum::Int4(args.iter().filter(|d| d.is_null()).count() as i32)),
        F::NumNonNulls => Ok(Datum::Int4(args.iter().filter(|d| !d.is_null()).count() as i32)),
        F::QuoteNullable => Ok(Datum::Text(match args {
            [Datum::Text(s)] => quote_literal(s),
            _ => "NULL".to_string(),
        })),
        F::Format => {
            let Some((format, values)) = args.split_first() else {
                return Err(Error::internal("format without arguments"));
            };
            match text_of(format) {
                None => Ok(Datum::Null),
                Some(format) => format_text(&format, values).map(Datum::Text),
            }
        }
        _ => Err(Error::internal(format!("{}() is not a variadic function", func.name()))),
    }
}

/// `format(formatstr, ...)`: `%s` (text), `%I` (identifier), `%L` (literal), `%%`, each
/// with an optional `n$` argument position, `-` flag and width (a number, `*` or `*n$`).
fn format_text(format: &str, values: &[Datum]) -> Result<String> {
    let invalid = |message: String| Error::new(SqlState::INVALID_PARAMETER_VALUE, message);
    let too_few = || invalid("too few arguments for format()".to_string());
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    let mut next_arg = 0usize;
    // Reads digits; `None` when there are none.
    let number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> Result<Option<usize>> {
        let mut value: Option<usize> = None;
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            chars.next();
            value = Some(
                value
                    .unwrap_or(0)
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(d as usize))
                    .filter(|&v| v <= i32::MAX as usize)
                    .ok_or_else(|| invalid("number is out of range".to_string()))?,
            );
        }
        Ok(value)
    };
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // [argpos$][flags][width]type
        let mut position = None;
        let mut left_align = false;
        let mut width: Option<i64> = None;
        let first = number(&mut chars)?;
        if first.is_some() && chars.peek() == Some(&'$') {
            chars.next();
            position = first;
        } else if let Some(w) = first {
            width = Some(w as i64);
        }
        if width.is_none() {
            while chars.peek() == Some(&'-') {
                chars.next();
                left_align = true;
            }
            if chars.peek() == Some(&'*') {
                chars.next();
                let star_position = number(&mut chars)?;
                let index = match star_position {
                    Some(p) => {
                        if chars.next() != Some('$') {
                            return Err(invalid("width argument position must be ended by \"$\"".to_string()));
                        }
                        p.checked_sub(1).ok_or_else(|| invalid("format specifies argument 0, but arguments are numbered from 1".to_string()))?
                    }
                    None => {
                        next_arg += 1;
                        next_arg - 1
                    }
                };
                let value = values.get(index).ok_or_else(too_few)?;
                width = Some(match value {
                    Datum::Null => 0,
                    Datum::Int4(v) => *v as i64,
                    Datum::Int8(v) => *v,
                    other => other
                        .to_pg_text()
                        .and_then(|t| t.trim().parse::<i64>().ok())
                        .ok_or_else(|| invalid("invalid width argument".to_string()))?,
                });
            } else {
                width = number(&mut chars)?.map(|w| w as i64);
            }
        }
        let Some(kind) = chars.next() else {
            return Err(invalid("unterminated format() type specifier".to_string())
                .with_hint("For a single \"%\" use \"%%\"."));
        };
        let index = match position {
            Some(0) => return Err(invalid("format specifies argument 0, but arguments are numbered from 1".to_string())),
            Some(p) => p - 1,
            None => next_arg,
        };
        if !matches!(kind, 's' | 'I' | 'L') {
            return Err(invalid(format!("unrecognized format() type specifier \"{kind}\""))
                .with_hint("For a single \"%\" use \"%%\"."));
        }
        let value = values.get(index).ok_or_else(too_few)?;
        next_arg = index + 1;
        let rendered = match (kind, value.to_pg_text()) {
            ('s', text) => text.unwrap_or_default(),
            ('I', Some(text)) => quote_ident(&text),
            ('I', None) => {
                return Err(Error::new(SqlState("22004"), "null values cannot be formatted as an SQL identifier"))
            }
            (_, Some(text)) => quote_literal(&text),
            (_, None) => "NULL".to_string(),
        };
        let (left_align, width) = match width {
            Some(w) if w < 0 => (true, w.unsigned_abs() as usize),
            Some(w) => (left_align, w as usize),
            None => (left_align, 0),
        };
        let pad = width.saturating_sub(rendered.chars().count());
        if left_align {
            out.push_str(&rendered);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&rendered);
        }
    }
    Ok(out)
}

/// The first `n` characters; a negative `n` drops that many from the end.
fn left(s: &str, n: i32) -> String {
    let count = s.chars().count() as i64;
    let take = if n >= 0 { i64::from(n).min(count) } else { (count + i64::from(n)).max(0) };
    s.chars().take(take as usize).collect()
}

/// The last `n` characters; a negative `n` drops that many from the start.
fn right(s: &str, n: i32) -> String {
    let count = s.chars().count() as i64;
    let skip = if n >= 0 { (count - i64::from(n)).max(0) } else { i64::from(n).unsigned_abs().min(count as u64) as i64 };
    s.chars().skip(skip as usize).collect()
}

/// `lpad`/`rpad`: fill to `length` characters with repetitions of `fill`, or cut to it.
fn pad(s: &str, length: i32, fill: &str, on_left: bool) -> Result<String> {
    let length = usize::try_from(length).unwrap_or(0);
    let count = s.chars().count();
    if length <= count || fill.is_empty() {
        return Ok(s.chars().take(length).collect());
    }
    if length.saturating_mul(4) > VALUE_SIZE_BYTES_MAX {
        return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "requested length too large"));
    }
    let padding: String = fill.chars().cycle().take(length - count).collect();
    Ok(if on_left { padding + s } else { s.to_string() + &padding })
}

/// `split_part(s, delimiter, n)`: the n-th field (1-based; negative counts from the end).
fn split_part(s: &str, delimiter: &str, n: i32) -> Result<String> {
    if n == 0 {
        return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "field position must not be zero"));
    }
    if delimiter.is_empty() {
        return Ok(if n == 1 || n == -1 { s.to_string() } else { String::new() });
    }
    let fields: Vec<&str> = s.split(delimiter).collect();
    let index = if n > 0 { n as i64 - 1 } else { fields.len() as i64 + n as i64 };
    Ok(usize::try_from(index).ok().and_then(|i| fields.get(i)).map_or(String::new(), |f| f.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_examples() {
        assert_eq!(left("abcde", 2), "ab");
        assert_eq!(left("abcde", -2), "abc");
        assert_eq!(right("abcde", 2), "de");
        assert_eq!(right("abcde", -2), "cde");
        assert_eq!(pad("hi", 5, "xy", true).unwrap(), "xyxhi");
        assert_eq!(pad("hello", 2, " ", false).unwrap(), "he");
        assert_eq!(split_part("abc~@~def~@~ghi", "~@~", 2).unwrap(), "def");
        assert_eq!(split_part("abc,def,ghi", ",", -1).unwrap(), "ghi");
        assert_eq!(split_part("abc", ",", 3).unwrap(), "");
        assert!(split_part("abc", ",", 0).is_err());
    }
}
