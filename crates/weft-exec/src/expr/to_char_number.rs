//! `to_char(int4 | int8 | numeric | float8, text)`: PostgreSQL's numeric template patterns
//! (`formatting.c`'s NUM_ processor), in the C locale (`D` is `.`, `G` is `,`, `L` a
//! blank). The value is first made a digit string fitting the template (`9` and `0` count
//! digits before and after the decimal point, `V` shifts it, rounding to the template's
//! fraction digits, `#`s when the integer part does not fit), then the template is walked
//! node by node as PostgreSQL walks it, so blanks, signs, fill mode and the odd corners
//! (` .5` for `9.9`, `FM9.` keeping the point) come out the same.

use weft_common::{Datum, Error, Result, SqlState};

/// A template keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Comma,
    Dec,
    Zero,
    Nine,
    B,
    D,
    Eeee,
    Fm,
    G,
    L,
    Mi,
    Pl,
    Pr,
    RnUpper,
    RnLower,
    Sg,
    Sp,
    S,
    C,
    ThUpper,
    ThLower,
    V,
}

/// Keywords as PostgreSQL's table lists them, longer ones before their prefixes.
const KEYWORDS: &[(&str, Key)] = &[
    (",", Key::Comma),
    (".", Key::Dec),
    ("0", Key::Zero),
    ("9", Key::Nine),
    ("B", Key::B),
    ("C", Key::C),
    ("D", Key::D),
    ("EEEE", Key::Eeee),
    ("FM", Key::Fm),
    ("G", Key::G),
    ("L", Key::L),
    ("MI", Key::Mi),
    ("PL", Key::Pl),
    ("PR", Key::Pr),
    ("RN", Key::RnUpper),
    ("SG", Key::Sg),
    ("SP", Key::Sp),
    ("S", Key::S),
    ("TH", Key::ThUpper),
    ("V", Key::V),
    ("b", Key::B),
    ("c", Key::C),
    ("d", Key::D),
    ("eeee", Key::Eeee),
    ("fm", Key::Fm),
    ("g", Key::G),
    ("l", Key::L),
    ("mi", Key::Mi),
    ("pl", Key::Pl),
    ("pr", Key::Pr),
    ("rn", Key::RnLower),
    ("sg", Key::Sg),
    ("sp", Key::Sp),
    ("s", Key::S),
    ("th", Key::ThLower),
    ("v", Key::V),
];

enum Node {
    Key(Key),
    Text(String),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LSign {
    None,
    Pre,
    Post,
}

/// PostgreSQL's NUMDesc: what the template asks for.
#[derive(Clone)]
struct Desc {
    pre: usize,
    post: usize,
    lsign: LSign,
    pre_lsign_num: usize,
    multi: usize,
    zero_start: usize,
    zero_end: usize,
    decimal: bool,
    zero: bool,
    blank: bool,
    fill: bool,
    minus: bool,
    plus: bool,
    bracket: bool,
    roman: bool,
    multi_flag: bool,
    eeee: bool,
}

fn format_error(message: &str) -> Error {
    Error::new(SqlState::SYNTAX_ERROR, message)
}

/// Split the template into nodes and describe it, with PostgreSQL's errors.
fn parse(format: &str) -> Result<(Vec<Node>, Desc)> {
    let mut nodes = Vec::new();
    let mut d = Desc {
        pre: 0,
        post: 0,
        lsign: LSign::None,
        pre_lsign_num: 0,
        multi: 0,
        zero_start: 0,
        zero_end: 0,
        decimal: false,
        zero: false,
        blank: false,
        fill: false,
        minus: false,
        plus: false,
        bracket: false,
        roman: false,
        multi_flag: false,
        eeee: false,
    };
    let mut rest = format;
    while let Some(c) = rest.chars().next() {
        if let Some(&(word, key)) = KEYWORDS.iter().find(|(word, _)| rest.starts_with(word)) {
            describe(&mut d, key)?;
            nodes.push(Node::Key(key));
            rest = &rest[word.len()..];
            continue;
        }
        if c == '"' {
            // Quoted text is copied; a backslash keeps the next character.
            let mut text = String::new();
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((i, ch)) = chars.next() {
                match ch {
                    '"' => {
                        end = 1 + i + 1;
                        break;
                    }
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            text.push(next);
                        }
                    }
                    other => text.push(other),
                }
            }
            nodes.push(Node::Text(text));
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        if c == '\\' && rest[1..].starts_with('"') {
            nodes.push(Node::Text("\"".into()));
            rest = &rest[2..];
            continue;
        }
        nodes.push(Node::Text(c.to_string()));
        rest = &rest[c.len_utf8()..];
    }
    Ok((nodes, d))
}

/// PostgreSQL's NUMDesc_prepare for one keyword.
fn describe(d: &mut Desc, key: Key) -> Result<()> {
    if d.eeee && key != Key::Eeee {
        return Err(format_error("\"EEEE\" must be the last pattern used"));
    }
    match key {
        Key::Nine => {
            if d.bracket {
                return Err(format_error("\"9\" must be ahead of \"PR\""));
            }
            if d.multi_flag {
                d.multi += 1;
            } else if d.decimal {
                d.post += 1;
            } else {
                d.pre += 1;
            }
        }
        Key::Zero => {
            if d.bracket {
                return Err(format_error("\"0\" must be ahead of \"PR\""));
            }
            if !d.zero && !d.decimal {
                d.zero = true;
                d.zero_start = d.pre + 1;
            }
            if !d.decimal {
                d.pre += 1;
            } else {
                d.post += 1;
            }
            d.zero_end = d.pre + d.post;
        }
        Key::B => {
            if d.pre == 0 && d.post == 0 && !d.zero {
                d.blank = true;
            }
        }
        Key::D | Key::Dec => {
            if d.decimal {
                return Err(format_error("multiple decimal points"));
            }
            if d.multi_flag {
                return Err(format_error("cannot use \"V\" and decimal point together"));
            }
            d.decimal = true;
        }
        Key::Fm => d.fill = true,
        Key::S => {
            if d.lsign != LSign::None {
                return Err(format_error("cannot use \"S\" twice"));
            }
            if d.plus || d.minus || d.bracket {
                return Err(format_error("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together"));
            }
            if !d.decimal {
                d.lsign = LSign::Pre;
                d.pre_lsign_num = d.pre;
            } else {
                d.lsign = LSign::Post;
            }
        }
        Key::Mi => {
            if d.lsign != LSign::None {
                return Err(format_error("cannot use \"S\" and \"MI\" together"));
            }
            d.minus = true;
        }
        Key::Pl => {
            if d.lsign != LSign::None {
                return Err(format_error("cannot use \"S\" and \"PL\" together"));
            }
            d.plus = true;
        }
        Key::Sg => {
            if d.lsign != LSign::None {
                return Err(format_error("cannot use \"S\" and \"SG\" together"));
            }
            d.minus = true;
            d.plus = true;
        }
        Key::Pr => {
            if d.lsign != LSign::None || d.plus || d.minus {
                return Err(format_error("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together"));
            }
            d.bracket = true;
        }
        Key::RnUpper | Key::RnLower => d.roman = true,
        Key::L | Key::G | Key::Comma | Key::ThUpper | Key::ThLower | Key::C | Key::Sp => {}
        Key::V => {
            if d.decimal {
                return Err(format_error("cannot use \"V\" and decimal point together"));
            }
            d.multi_flag = true;
        }
        Key::Eeee => {
            if d.eeee {
                return Err(format_error("cannot use \"EEEE\" twice"));
            }
            if d.blank || d.fill || d.lsign != LSign::None || d.bracket || d.minus || d.plus || d.roman || d.multi_flag {
                return Err(format_error("\"EEEE\" is incompatible with other formats")
                    .with_detail("\"EEEE\" may only be used together with digit and decimal point patterns."));
            }
            d.eeee = true;
        }
    }
    Ok(())
}

/// `to_char` of a number (int4, int8, numeric or float8).
pub fn to_char_number(value: &Datum, format: &str) -> Result<Datum> {
    let (nodes, mut d) = parse(format)?;
    let (number, sign, out_pre_spaces) = match value {
        Datum::Int4(v) => integer_number(*v as i64, &mut d, i32::MIN as i64, i32::MAX as i64, "integer")?,
        Datum::Int8(v) => integer_number(*v, &mut d, i64::MIN, i64::MAX, "bigint")?,
        Datum::Numeric(n) => {
            if d.roman {
                let rounded = n.round(0)?;
                let roman = match rounded.to_exact_i64().and_then(|v| i32::try_from(v).ok()) {
                    Some(v) => to_roman(v as i64),
                    None => return Err(Error::out_of_range("integer")),
                };
                (roman, '\0', 0)
            } else if d.eeee {
                (numeric_sci(&n.to_string(), d.post, d.pre), '\0', 0)
            } else {
                decimal_number(&n.to_string(), &mut d)
            }
        }
        Datum::Float8(v) => float_number(*v, &mut d)?,
        other => return Err(Error::internal(format!("to_char of {other:?}"))),
    };
    Ok(Datum::Text(process(&nodes, d, number, sign, out_pre_spaces)))
}

/// The `#`s of a number that does not fit: `pre` and `post` of them around the point.
fn overflow_fill(d: &Desc) -> String {
    let mut s = "#".repeat(d.pre + d.post + 1);
    s.replace_range(d.pre..d.pre + 1, ".");
    s
}

/// The digit string, sign and leading blanks of an integer.
fn integer_number(v: i64, d: &mut Desc, min: i64, max: i64, type_name: &str) -> Result<(String, char, usize)> {
    if d.roman {
        if i32::try_from(v).is_err() {
            return Err(Error::out_of_range("integer"));
        }
        return Ok((to_roman(v), '\0', 0));
    }
    if d.eeee {
        // PostgreSQL formats an int4 through float8, an int8 (exactly) through numeric.
        if type_name == "integer" {
            return float_number(v as f64, d);
        }
        return Ok((numeric_sci(&v.to_string(), d.post, d.pre), '\0', 0));
    }
    let mut v = v as i128;
    if d.multi_flag {
        v = if type_name == "integer" {
            // PostgreSQL 15 multiplies an int4 in C, wrapping around (and `(int32) pow()`
            // past int4's range is INT_MIN on x86).
            let factor = 10i64.checked_pow(d.multi as u32).and_then(|f| i32::try_from(f).ok()).unwrap_or(i32::MIN);
            (v as i32).wrapping_mul(factor) as i128
        } else {
            10i128.checked_pow(d.multi as u32).and_then(|f| v.checked_mul(f)).filter(|p| (min as i128..=max as i128).contains(p)).ok_or_else(|| Error::out_of_range(type_name))?
        };
        d.pre += d.multi;
    }
    let sign = if v < 0 { '-' } else { '+' };
    let digits = v.unsigned_abs().to_string();
    let pre_len = digits.len();
    let mut number = digits;
    if d.post > 0 {
        number.push('.');
        number.push_str(&"0".repeat(d.post));
    }
    Ok(fit(number, pre_len, sign, d))
}

/// Leading blanks for a short integer part, `#`s for a long one.
fn fit(number: String, pre_len: usize, sign: char, d: &Desc) -> (String, char, usize) {
    if pre_len < d.pre {
        (number, sign, d.pre - pre_len)
    } else if pre_len > d.pre {
        (overflow_fill(d), sign, 0)
    } else {
        (number, sign, 0)
    }
}

/// A numeric's decimal text (`-12.345`) shifted by `V`, rounded half away from zero to
/// the template's fraction digits, as PostgreSQL's numeric_to_char does.
fn decimal_number(text: &str, d: &mut Desc) -> (String, char, usize) {
    if !text.starts_with(|c: char| c.is_ascii_digit() || c == '-') || text.ends_with("Infinity") {
        // NaN and the infinities: their text stands in for the digits.
        let (sign, body) = match text.strip_prefix('-') {
            Some(body) => ('-', body.to_string()),
            None => ('+', text.to_string()),
        };
        let pre_len = body.len();
        return fit(body, pre_len, sign, d);
    }
    let negative = text.starts_with('-');
    let body = text.trim_start_matches('-');
    let (int_part, frac_part) = body.split_once('.').unwrap_or((body, ""));
    let mut int_digits = int_part.to_string();
    let mut frac_digits = frac_part.to_string();
    if d.multi_flag {
        // Multiply by 10^multi: digits move across the point.
        while frac_digits.len() < d.multi {
            frac_digits.push('0');
        }
        int_digits.push_str(&frac_digits[..d.multi]);
        frac_digits = frac_digits[d.multi..].to_string();
        d.pre += d.multi;
    }
    // Round to `post` fraction digits.
    let mut digits: Vec<u8> = int_digits.bytes().chain(frac_digits.bytes()).map(|b| b - b'0').collect();
    let int_len = int_digits.len();
    let keep = int_len + d.post;
    round_half_up(&mut digits, keep);
    let int_len = digits.len() - d.post;
    let mut int_str: String = digits[..int_len].iter().map(|&x| (b'0' + x) as char).collect();
    let trimmed = int_str.trim_start_matches('0');
    int_str = if trimmed.is_empty() { "0".to_string() } else { trimmed.to_string() };
    let frac_str: String = digits[int_len..].iter().map(|&x| (b'0' + x) as char).collect();
    // Numeric has no negative zero.
    let zero = digits.iter().all(|&x| x == 0);
    let sign = if negative && !zero { '-' } else { '+' };
    let pre_len = int_str.len();
    let mut number = int_str;
    if d.post > 0 {
        number.push('.');
        number.push_str(&frac_str);
    }
    fit(number, pre_len, sign, d)
}

/// Keep the first `keep` of `digits` (decimal digits, most significant first), rounding
/// half away from zero on the digit after them; a carry out of the first digit adds a
/// leading 1.
fn round_half_up(digits: &mut Vec<u8>, keep: usize) {
    let round_up = digits.get(keep).is_some_and(|&d| d >= 5);
    digits.resize(keep, 0);
    if !round_up {
        return;
    }
    for i in (0..keep).rev() {
        if digits[i] == 9 {
            digits[i] = 0;
        } else {
            digits[i] += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

/// PostgreSQL's numeric_out_sci with a blank for a positive sign: `post` digits after the
/// point, an exponent of at least two digits. Exact for integers and numerics.
fn numeric_sci(text: &str, post: usize, pre: usize) -> String {
    if !text.starts_with(|c: char| c.is_ascii_digit() || c == '-') || text.ends_with("Infinity") {
        let mut s = "#".repeat(pre + post + 6);
        s.replace_range(0..1, " ");
        s.replace_range(pre + 1..pre + 2, ".");
        return s;
    }
    let negative = text.starts_with('-');
    let body = text.trim_start_matches('-');
    let (int_part, frac_part) = body.split_once('.').unwrap_or((body, ""));
    let all: Vec<u8> = int_part.bytes().chain(frac_part.bytes()).map(|b| b - b'0').collect();
    let first = all.iter().position(|&x| x != 0);
    let (mut digits, exponent) = match first {
        // Zero: 0.00e+00.
        None => (vec![0u8; post + 1], 0i64),
        Some(f) => (all[f..].to_vec(), int_part.len() as i64 - 1 - f as i64),
    };
    // PostgreSQL chose the exponent before rounding: 99.95 is `10.00e+01` (a carry out of
    // the first digit makes the mantissa one digit longer).
    round_half_up(&mut digits, post + 1);
    let mut s = String::from(if negative && first.is_some() { "-" } else { " " });
    let int_len = digits.len() - post;
    s.extend(digits[..int_len].iter().map(|&x| (b'0' + x) as char));
    if post > 0 {
        s.push('.');
        s.extend(digits[int_len..].iter().map(|&x| (b'0' + x) as char));
    }
    s.push_str(&format!("e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs()));
    s
}

/// DBL_DIG: the significant digits a float8 prints.
const DBL_DIG: usize = 15;

/// PostgreSQL's float8_to_char preparation.
fn float_number(v: f64, d: &mut Desc) -> Result<(String, char, usize)> {
    if d.roman {
        // PostgreSQL's `(int) rint(value)`: a value past int4's range is no numeral either.
        let rounded = v.round_ties_even();
        let numeral = if (1.0..=3999.0).contains(&rounded) { to_roman(rounded as i64) } else { to_roman(0) };
        return Ok((numeral, '\0', 0));
    }
    if d.eeee {
        if v.is_nan() || v.is_infinite() {
            return Ok((numeric_sci("NaN", d.post, d.pre), '\0', 0));
        }
        let formatted = format!("{:.*e}", d.post, v);
        // Rust writes `1.5e3`; C's `%+.*e` writes `+1.5e+03`, the `+` becoming a blank.
        let (mantissa, exponent) = formatted.split_once('e').expect("an exponent");
        let exponent: i64 = exponent.parse().expect("an integer exponent");
        let mantissa = if mantissa.starts_with('-') { mantissa.to_string() } else { format!(" {mantissa}") };
        return Ok((format!("{mantissa}e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs()), '\0', 0));
    }
    let mut val = v;
    if d.multi_flag {
        val = v * 10f64.powi(d.multi as i32);
        d.pre += d.multi;
    }
    let whole = c_fixed(val.abs(), 0);
    let pre_len = whole.len();
    // Digits past DBL_DIG significant ones are noise.
    if pre_len >= DBL_DIG {
        d.post = 0;
    } else if pre_len + d.post > DBL_DIG {
        d.post = DBL_DIG - pre_len;
    }
    let text = c_fixed(val, d.post);
    let (sign, number) = match text.strip_prefix('-') {
        Some(rest) => ('-', rest.to_string()),
        None => ('+', text),
    };
    let pre_len = number.find('.').unwrap_or(number.len());
    Ok(fit(number, pre_len, sign, d))
}

/// `%.*f` as PostgreSQL's own snprintf writes it (`NaN`, `Infinity`).
fn c_fixed(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-Infinity".into() } else { "Infinity".into() };
    }
    format!("{v:.digits$}")
}

/// Roman numerals for 1..=3999, else 15 `#`s.
fn to_roman(v: i64) -> String {
    if !(1..=3999).contains(&v) {
        return "#".repeat(15);
    }
    const PARTS: &[(i64, &str)] =
        &[(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")];
    let mut v = v;
    let mut s = String::new();
    for &(value, letters) in PARTS {
        while v >= value {
            s.push_str(letters);
            v -= value;
        }
    }
    s
}

/// The English ordinal suffix of a digit string (`1st`, `12th`, `22nd`).
fn ordinal_suffix(number: &str, upper: bool) -> Result<&'static str> {
    let bytes = number.as_bytes();
    let Some(&last) = bytes.last().filter(|b| b.is_ascii_digit()) else {
        return Err(Error::new(SqlState::INVALID_TEXT_REPRESENTATION, format!("\"{number}\" is not a number")));
    };
    let teen = bytes.len() > 1 && bytes[bytes.len() - 2] == b'1';
    let suffix = match (teen, last) {
        (false, b'1') => "st",
        (false, b'2') => "nd",
        (false, b'3') => "rd",
        _ => "th",
    };
    Ok(if upper {
        match suffix {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        suffix
    })
}

/// PostgreSQL's NUM_processor writing `number` (digits, maybe a point, or `#`s) into the
/// template.
fn process(nodes: &[Node], mut d: Desc, number: String, sign: char, out_pre_spaces: usize) -> String {
    if d.eeee {
        return number;
    }
    let mut p = Processor { number: number.into_bytes(), number_p: 0, sign, sign_wrote: false, num_in: false, num_curr: 0, num_count: 0, out_pre_spaces, last_relevant: None, out: String::new() };
    if d.zero_start > 0 {
        d.zero_start -= 1;
    }
    if d.roman {
        let fill = d.fill;
        d = Desc { pre: 0, post: 0, lsign: LSign::None, pre_lsign_num: 0, multi: 0, zero_start: d.zero_start, zero_end: d.zero_end, decimal: false, zero: false, blank: false, fill, minus: false, plus: false, bracket: false, roman: true, multi_flag: false, eeee: false };
        p.out_pre_spaces = 0;
        p.sign = '\0';
    } else {
        if d.plus || d.minus {
            p.sign_wrote = !(d.plus && !d.minus);
        } else {
            if p.sign != '-' && d.fill {
                d.bracket = false;
            }
            p.sign_wrote = p.sign == '+' && d.fill && d.lsign == LSign::None;
            if d.lsign == LSign::Pre && d.pre == d.pre_lsign_num {
                d.lsign = LSign::Post;
            }
        }
    }
    p.num_count = (d.post + d.pre) as isize - 1;
    if d.fill && d.decimal {
        p.last_relevant = last_relevant_decimal(&p.number);
        if let Some(last) = p.last_relevant {
            // `0`s in the template keep their digits.
            if d.zero_end > p.out_pre_spaces {
                let last_zero = d.zero_end - p.out_pre_spaces;
                if last < last_zero {
                    p.last_relevant = Some(last_zero);
                }
            }
        }
    }
    if !p.sign_wrote && p.out_pre_spaces == 0 {
        p.num_count += 1;
    }
    for node in nodes {
        let key = match node {
            Node::Text(text) => {
                p.out.push_str(text);
                continue;
            }
            Node::Key(key) => *key,
        };
        match key {
            Key::Nine | Key::Zero | Key::Dec | Key::D => p.numpart(&d, key),
            Key::Comma | Key::G => {
                if !p.num_in {
                    if !d.fill {
                        p.out.push(' ');
                    }
                } else {
                    p.out.push(',');
                }
            }
            Key::L => p.out.push(' '),
            Key::RnUpper | Key::RnLower => {
                let roman = String::from_utf8_lossy(&p.number[p.number_p..]).into_owned();
                let roman = if key == Key::RnLower { roman.to_lowercase() } else { roman };
                if d.fill {
                    p.out.push_str(&roman);
                } else {
                    p.out.push_str(&format!("{roman:>15}"));
                }
            }
            Key::ThUpper | Key::ThLower => {
                if d.roman || p.number.first() == Some(&b'#') || p.sign == '-' || d.decimal {
                    continue;
                }
                let digits = String::from_utf8_lossy(&p.number).into_owned();
                match ordinal_suffix(&digits, key == Key::ThUpper) {
                    Ok(suffix) => p.out.push_str(suffix),
                    Err(_) => continue,
                }
            }
            Key::Mi => {
                if p.sign == '-' {
                    p.out.push('-');
                } else if !d.fill {
                    p.out.push(' ');
                }
            }
            Key::Pl => {
                if p.sign == '+' {
                    p.out.push('+');
                } else if !d.fill {
                    p.out.push(' ');
                }
            }
            Key::Sg => {
                if p.sign != '\0' {
                    p.out.push(p.sign);
                }
            }
            // Flags of the template, or keywords PostgreSQL reserves and prints nothing for.
            Key::B | Key::Eeee | Key::Fm | Key::Pr | Key::S | Key::V | Key::C | Key::Sp => {}
        }
    }
    // A digit written past the end of a short number (a float8 cut to 15 digits) ends the
    // text, as the NUL PostgreSQL writes there does.
    match p.out.find('\0') {
        Some(at) => p.out[..at].to_string(),
        None => p.out,
    }
}

/// The last fraction digit that is not a zero (or the point itself).
fn last_relevant_decimal(number: &[u8]) -> Option<usize> {
    let point = number.iter().position(|&b| b == b'.')?;
    let mut result = point;
    for (i, &b) in number.iter().enumerate().skip(point + 1) {
        if b != b'0' {
            result = i;
        }
    }
    Some(result)
}

struct Processor {
    number: Vec<u8>,
    number_p: usize,
    sign: char,
    sign_wrote: bool,
    num_in: bool,
    num_curr: usize,
    num_count: isize,
    out_pre_spaces: usize,
    last_relevant: Option<usize>,
    out: String,
}

impl Processor {
    fn current(&self) -> u8 {
        self.number.get(self.number_p).copied().unwrap_or(0)
    }

    /// The number's leading `0` before the point, printed as a blank (`0.1` → ` .1`).
    fn predec_space(&self, d: &Desc) -> bool {
        !d.zero && self.number_p == 0 && self.number.first() == Some(&b'0') && d.post != 0
    }

    fn last_relevant_is_point(&self) -> bool {
        self.last_relevant.is_some_and(|at| self.number.get(at) == Some(&b'.'))
    }

    /// PostgreSQL's NUM_numpart_to_char: one `9`, `0`, `.` or `D` of the template.
    fn numpart(&mut self, d: &Desc, key: Key) {
        if d.roman {
            return;
        }
        self.num_in = false;
        let sign_position = self.num_curr >= self.out_pre_spaces || (d.zero && d.zero_start == self.num_curr);
        if !self.sign_wrote && sign_position && (!self.predec_space(d) || self.last_relevant_is_point()) {
            if d.lsign != LSign::None {
                if d.lsign == LSign::Pre {
                    self.out.push(if self.sign == '-' { '-' } else { '+' });
                    self.sign_wrote = true;
                }
            } else if d.bracket {
                self.out.push(if self.sign == '+' { ' ' } else { '<' });
                self.sign_wrote = true;
            } else if self.sign == '+' {
                if !d.fill {
                    self.out.push(' ');
                }
                self.sign_wrote = true;
            } else if self.sign == '-' {
                self.out.push('-');
                self.sign_wrote = true;
            }
        }
        if self.num_curr < self.out_pre_spaces && (d.zero_start > self.num_curr || !d.zero) {
            if !d.fill {
                self.out.push(' ');
            }
        } else if d.zero && self.num_curr < self.out_pre_spaces && d.zero_start <= self.num_curr {
            self.out.push('0');
            self.num_in = true;
        } else {
            if self.current() == b'.' {
                if !self.last_relevant_is_point() || d.fill {
                    self.out.push('.');
                }
            } else if self.last_relevant.is_some_and(|at| self.number_p > at) && key != Key::Zero {
                // Trailing zeros in fill mode.
            } else if self.predec_space(d) {
                if !d.fill {
                    self.out.push(' ');
                } else if self.last_relevant_is_point() {
                    self.out.push('0');
                }
            } else {
                self.out.push(self.current() as char);
                self.num_in = true;
            }
            if self.current() != 0 {
                self.number_p += 1;
            }
        }
        let mut end = self.num_count + isize::from(self.out_pre_spaces > 0) + isize::from(d.decimal);
        if self.last_relevant.is_some_and(|at| at == self.number_p) {
            end = self.num_curr as isize;
        }
        if self.num_curr as isize + 1 == end {
            if self.sign_wrote && d.bracket {
                self.out.push(if self.sign == '+' { ' ' } else { '>' });
            } else if d.lsign == LSign::Post {
                self.out.push(if self.sign == '-' { '-' } else { '+' });
            }
        }
        self.num_curr += 1;
    }
}
