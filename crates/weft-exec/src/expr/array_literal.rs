//! PostgreSQL's array input syntax (`array_in`): a literal is read into its elements, in
//! storage order (a multidimensional array flattened), as text (`None` for NULL) for the
//! caller to read in the element type. The right side of `op ANY | ALL ('{...}')` takes
//! the flattened elements; a cast to an array type ([`parse_array`]) takes
//! one-dimensional literals only (weft's arrays have one dimension, lower bound 1).
//!
//! Syntax: optional dimension decoration `[lo:hi]...=` then `{...}` with elements
//! separated by commas; an element is `"quoted"` (backslash escapes) or unquoted
//! (backslash escapes, surrounding white space dropped, `NULL` in any case is NULL);
//! sub-arrays at one depth must all have the same length. A malformed literal is 22P02
//! `malformed array literal: "..."` with PostgreSQL's detail.

use weft_common::types::{Array, ElemType};
use weft_common::{Datum, Error, Result, SqlState};

/// The elements of array literal `input`, flattened.
pub fn parse_array_literal(input: &str) -> Result<Vec<Option<String>>> {
    Ok(parse_array_literal_dims(input)?.0)
}

/// The value of `'{...}'::elem[]`: elements read by `elem`'s input function. Several
/// dimensions or explicit bounds are 0A000 (not supported).
pub fn parse_array(input: &str, elem: ElemType) -> Result<Datum> {
    let (elements, dims, declared) = parse_array_literal_dims(input)?;
    if dims > 1 {
        return Err(Error::not_supported("multidimensional arrays are not supported"));
    }
    if declared {
        return Err(Error::not_supported("array dimension decorations are not supported"));
    }
    let items = elements
        .into_iter()
        .map(|e| match e {
            Some(text) => super::cast::parse_text(&text, elem.data_type()),
            None => Ok(Datum::Null),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Datum::Array(Box::new(Array { elem, items })))
}

/// The flattened elements, the number of dimensions, and whether bounds were written.
fn parse_array_literal_dims(input: &str) -> Result<(Vec<Option<String>>, usize, bool)> {
    let malformed = |detail: &str| {
        Error::new(SqlState::INVALID_TEXT_REPRESENTATION, format!("malformed array literal: \"{input}\"")).with_detail(detail)
    };
    let mut reader = Reader { chars: input.chars().collect(), at: 0 };
    reader.skip_space();
    let declared = if reader.peek() == Some('[') { Some(reader.dimensions().map_err(|d| malformed(&d))?) } else { None };
    if reader.peek() != Some('{') {
        let detail = if declared.is_some() { "Array contents must start with \"{\"." } else { "Array value must start with \"{\" or dimension information." };
        return Err(malformed(detail));
    }
    let mut elements = Vec::new();
    let mut lengths: Vec<Option<usize>> = Vec::new();
    reader.array(0, &mut lengths, &mut elements).map_err(|d| malformed(&d))?;
    reader.skip_space();
    if reader.peek().is_some() {
        return Err(malformed("Junk after closing right brace."));
    }
    let has_bounds = declared.is_some();
    if let Some(declared) = declared {
        let found: Vec<usize> = lengths.iter().map(|l| l.unwrap_or(0)).collect();
        if !elements.is_empty() && declared != found {
            return Err(malformed("Specified array dimensions do not match array contents."));
        }
    }
    Ok((elements, lengths.len(), has_bounds))
}

struct Reader {
    chars: Vec<char>,
    at: usize,
}

/// PostgreSQL's `array_isspace`.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> std::result::Result<char, String> {
        let c = self.peek().ok_or_else(|| "Unexpected end of input.".to_string())?;
        self.at += 1;
        Ok(c)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(is_space) {
            self.at += 1;
        }
    }

    /// `[lo:hi][hi]...=`: the length of each dimension.
    fn dimensions(&mut self) -> std::result::Result<Vec<usize>, String> {
        let mut lengths = Vec::new();
        while self.peek() == Some('[') {
            self.at += 1;
            self.skip_space();
            let first = self.integer().ok_or("Missing array dimension value.")?;
            self.skip_space();
            let (lower, upper) = if self.peek() == Some(':') {
                self.at += 1;
                self.skip_space();
                let upper = self.integer().ok_or("Missing array dimension value.")?;
                (first, upper)
            } else {
                (1, first)
            };
            self.skip_space();
            if self.peek() != Some(']') {
                return Err("Missing \"]\" after array dimensions.".into());
            }
            self.at += 1;
            if upper < lower {
                return Err("Upper bound cannot be less than lower bound.".into());
            }
            lengths.push((upper - lower + 1) as usize);
            self.skip_space();
        }
        if self.peek() != Some('=') {
            return Err("Missing \"=\" after array dimensions.".into());
        }
        self.at += 1;
        self.skip_space();
        Ok(lengths)
    }

    fn integer(&mut self) -> Option<i64> {
        let start = self.at;
        if matches!(self.peek(), Some('+' | '-')) {
            self.at += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect::<String>().parse().ok()
    }

    /// One `{...}` at nesting `depth`; `lengths[d]` is the length every sub-array at
    /// depth `d` must have (`None` until the first one is read).
    fn array(&mut self, depth: usize, lengths: &mut Vec<Option<usize>>, out: &mut Vec<Option<String>>) -> std::result::Result<(), String> {
        self.next()?; // '{'
        if lengths.len() <= depth {
            lengths.push(None);
        }
        self.skip_space();
        let mut count = 0;
        // Whether this level holds sub-arrays or elements, once known.
        let mut nested: Option<bool> = None;
        if self.peek() == Some('}') {
            self.at += 1;
            return self.check_length(depth, 0, lengths);
        }
        loop {
            self.skip_space();
            match self.peek() {
                None => return Err("Unexpected end of input.".into()),
                Some('{') => {
                    if nested == Some(false) {
                        return Err("Unexpected \"{\" character.".into());
                    }
                    nested = Some(true);
                    self.array(depth + 1, lengths, out)?;
                }
                Some(c @ (',' | '}')) => return Err(format!("Unexpected \"{c}\" character.")),
                Some(_) => {
                    if nested == Some(true) || lengths.len() > depth + 1 {
                        return Err("Unexpected array element.".into());
                    }
                    nested = Some(false);
                    out.push(self.element()?);
                }
            }
            count += 1;
            self.skip_space();
            match self.next()? {
                ',' => continue,
                '}' => return self.check_length(depth, count, lengths),
                '"' => return Err("Unexpected array element.".into()),
                c => return Err(format!("Unexpected \"{c}\" character.")),
            }
        }
    }

    fn check_length(&self, depth: usize, count: usize, lengths: &mut [Option<usize>]) -> std::result::Result<(), String> {
        match lengths[depth] {
            Some(expected) if expected != count => Err("Multidimensional arrays must have sub-arrays with matching dimensions.".into()),
            _ => {
                lengths[depth] = Some(count);
                Ok(())
            }
        }
    }

    /// A quoted or unquoted element, up to (not including) its delimiter or `}`.
    fn element(&mut self) -> std::result::Result<Option<String>, String> {
        let mut text = String::new();
        if self.peek() == Some('"') {
            self.at += 1;
            loop {
                match self.next()? {
                    '"' => return Ok(Some(text)),
                    '\\' => text.push(self.next()?),
                    c => text.push(c),
                }
            }
        }
        // Unquoted: trailing white space is dropped unless escaped.
        let mut kept = 0;
        let mut escaped = false;
        loop {
            match self.peek() {
                None => return Err("Unexpected end of input.".into()),
                Some(',' | '}') => break,
                Some('"') => return Err("Unexpected array element.".into()),
                Some('{') => return Err("Unexpected \"{\" character.".into()),
                Some('\\') => {
                    self.at += 1;
                    text.push(self.next()?);
                    escaped = true;
                    kept = text.len();
                }
                Some(c) => {
                    self.at += 1;
                    text.push(c);
                    if !is_space(c) {
                        kept = text.len();
                    }
                }
            }
        }
        text.truncate(kept);
        if !escaped && text.eq_ignore_ascii_case("null") {
            return Ok(None);
        }
        Ok(Some(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Vec<Option<&'static str>> {
        parse_array_literal(s).unwrap().into_iter().map(|e| e.map(|t| &*Box::leak(t.into_boxed_str()))).collect()
    }

    fn detail(s: &str) -> String {
        let e = parse_array_literal(s).unwrap_err();
        assert_eq!(e.message, format!("malformed array literal: \"{s}\""));
        e.detail.clone().unwrap()
    }

    #[test]
    fn elements_quoted_unquoted_and_null() {
        assert_eq!(parse("{1,2,3}"), [Some("1"), Some("2"), Some("3")]);
        assert_eq!(parse("  { 1 , NULL, null }  "), [Some("1"), None, None]);
        assert_eq!(parse(r#"{"a b", "NULL", c\ , "x\"y"}"#), [Some("a b"), Some("NULL"), Some("c "), Some("x\"y")]);
        assert_eq!(parse("{}"), Vec::<Option<&str>>::new());
        assert_eq!(parse("{{1,2},{3,4}}"), [Some("1"), Some("2"), Some("3"), Some("4")]);
        assert_eq!(parse("[0:1]={5,6}"), [Some("5"), Some("6")]);
    }

    #[test]
    fn malformed_literals_say_why() {
        assert_eq!(detail("1,2"), "Array value must start with \"{\" or dimension information.");
        assert_eq!(detail("{1,2"), "Unexpected end of input.");
        assert_eq!(detail("{1,2}}"), "Junk after closing right brace.");
        assert_eq!(detail("{{1,2},{3}}"), "Multidimensional arrays must have sub-arrays with matching dimensions.");
        assert_eq!(detail("{{1},2}"), "Unexpected array element.");
        assert_eq!(detail("{a\"b}"), "Unexpected array element.");
        assert_eq!(detail("{1,,2}"), "Unexpected \",\" character.");
        assert_eq!(detail("[1:3]={1,2}"), "Specified array dimensions do not match array contents.");
    }
}
