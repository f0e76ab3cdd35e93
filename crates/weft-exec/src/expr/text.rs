//! Text functions in characters (not bytes), as PostgreSQL's with a UTF-8 database:
//! `replace`, `strpos`, `left`, `right`, `btrim`/`ltrim`/`rtrim`, `reverse`, `lpad`/`rpad`,
//! `split_part`, `starts_with`.

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
        _ => Err(Error::internal(format!("{}() called with unresolved arguments {args:?}", func.name()))),
    }
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
