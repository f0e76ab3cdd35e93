//! Built-in scalar functions: their signatures (used by `resolve_function`), their
//! evaluation, and the session state `random()` needs ([`EvalContext`]).
//!
//! Every function here is *strict*, as in PostgreSQL's catalog: a NULL argument gives a
//! NULL result without calling the function (so `setseed(NULL)` does not reseed) — except
//! `NULLIF`, `GREATEST` and `LEAST`, expressions in PostgreSQL that weft calls functions.
//! `random` and `setseed` are *volatile*: the planner must not fold or reorder them.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use weft_common::{DataType, Datum, Error, Result, SqlState};

use std::cmp::Ordering;

use super::compare::compare_datums;
use super::sequence::{SessionSequenceValues, Sequences};
use super::ScalarFunction;

/// PostgreSQL's `MaxAllocSize`: no single value may be larger (`repeat` checks it).
pub const VALUE_SIZE_BYTES_MAX: usize = 0x3fff_ffff;

/// Per-session evaluation state: the random-number generator behind `random()` and
/// `setseed()`.
///
/// Cloning shares the state (the generator sits behind an `Arc<Mutex<_>>`), so parallel
/// participants of one query draw from the session's single sequence, as PostgreSQL's
/// parallel workers do not — but a `setseed` in the leader still governs them all.
#[derive(Clone, Debug)]
pub struct EvalContext {
    rng: Arc<Mutex<Xoshiro256PlusPlus>>,
    /// The database's sequences and this session's `currval`s.
    sequences: Arc<Sequences>,
    session_sequences: Arc<SessionSequenceValues>,
    /// The values of a correlated subquery's outer references while its plan runs
    /// (`Expr::Param`), empty elsewhere.
    params: Arc<[Datum]>,
    subplans: super::subplan::SubPlanSlot,
    /// `now()` of the running statement (`datetime::StatementClock`).
    pub clock: super::datetime::StatementClock,
    /// `pg_backend_pid()`: the session's number among the database's sessions.
    backend_pid: i32,
}

impl Default for EvalContext {
    fn default() -> EvalContext {
        EvalContext::new()
    }
}

impl EvalContext {
    /// A context whose generator is seeded unpredictably, like a new PostgreSQL backend.
    pub fn new() -> EvalContext {
        // `RandomState` is seeded from the OS once per process and varied per instance.
        let seed = RandomState::new().hash_one(0x5eed_u64);
        EvalContext::with_seed(seed)
    }

    /// A context with a fixed seed, for tests.
    pub fn with_seed(seed: u64) -> EvalContext {
        EvalContext {
            rng: Arc::new(Mutex::new(Xoshiro256PlusPlus::seed_from_u64(seed))),
            sequences: Arc::default(),
            session_sequences: Arc::default(),
            params: Arc::new([]),
            subplans: Default::default(),
            clock: Default::default(),
            backend_pid: 0,
        }
    }

    /// This context in the session numbered `pid` (`pg_backend_pid()`).
    pub fn with_backend_pid(mut self, pid: i32) -> EvalContext {
        self.backend_pid = pid;
        self
    }

    /// This context drawing from the database's `sequences`.
    pub fn with_sequences(mut self, sequences: Arc<Sequences>) -> EvalContext {
        self.sequences = sequences;
        self
    }

    /// This context with `params` as the parameters (shares everything else).
    pub fn with_params(&self, params: Vec<Datum>) -> EvalContext {
        EvalContext { params: params.into(), ..self.clone() }
    }

    /// Parameter `index` of the running subplan.
    pub fn param(&self, index: usize) -> Result<&Datum> {
        self.params.get(index).ok_or_else(|| Error::internal(format!("parameter {index} is not set")))
    }

    /// Where the statement installs its subplan runner.
    pub fn subplans(&self) -> &super::subplan::SubPlanSlot {
        &self.subplans
    }

    /// `random()`: a float8 uniformly distributed in `[0, 1)`.
    pub fn random(&self) -> f64 {
        self.rng.lock().random::<f64>()
    }

    /// `setseed(seed)`: reseeds deterministically; `seed` must lie in `[-1, 1]`.
    /// The mapping `seed × i64::MAX` is PostgreSQL's `pg_prng_fseed`.
    pub fn set_seed(&self, seed: f64) -> Result<()> {
        if seed.is_nan() || !(-1.0..=1.0).contains(&seed) {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("setseed parameter {} is out of allowed range [-1,1]", format_c_g(seed)),
            ));
        }
        let state = (seed * i64::MAX as f64) as i64 as u64;
        *self.rng.lock() = Xoshiro256PlusPlus::seed_from_u64(state);
        Ok(())
    }
}

/// C's `printf("%g")`: six significant digits, trailing zeros dropped, exponent form
/// when the exponent is below -4 or at least 6.
fn format_c_g(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return (if v > 0.0 { "inf" } else { "-inf" }).to_string();
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa.to_string()), exponent.abs())
    } else {
        trim(format!("{v:.*}", (5 - exponent) as usize))
    }
}

/// One overload of a built-in function.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    pub func: ScalarFunction,
    pub args: &'static [DataType],
    pub result: DataType,
}

const fn sig(func: ScalarFunction, args: &'static [DataType], result: DataType) -> Signature {
    Signature { func, args, result }
}

use DataType::{Bool, Float8, Int4, Int8, Numeric, Text};
use ScalarFunction as F;

/// Every overload, by lowercase SQL name. `substring` is PostgreSQL's other name for
/// `substr`.
pub fn signatures(name: &str) -> &'static [Signature] {
    const MD5: &[Signature] = &[sig(F::Md5, &[Text], Text)];
    const PG_SIZE_PRETTY: &[Signature] = &[sig(F::PgSizePretty, &[Int8], Text), sig(F::PgSizePretty, &[Numeric], Text)];
    const HASHINT4: &[Signature] = &[sig(F::HashInt4, &[Int4], Int4)];
    const HASHINT8: &[Signature] = &[sig(F::HashInt8, &[Int8], Int4)];
    const HASHTEXT: &[Signature] = &[sig(F::HashText, &[Text], Int4)];
    const LENGTH: &[Signature] = &[sig(F::Length, &[Text], Int4)];
    const LOWER: &[Signature] = &[sig(F::Lower, &[Text], Text)];
    const UPPER: &[Signature] = &[sig(F::Upper, &[Text], Text)];
    const REPEAT: &[Signature] = &[sig(F::Repeat, &[Text, Int4], Text)];
    const SUBSTR: &[Signature] = &[sig(F::Substr, &[Text, Int4], Text), sig(F::Substr, &[Text, Int4, Int4], Text)];
    const ABS: &[Signature] = &[
        sig(F::Abs, &[Int4], Int4),
        sig(F::Abs, &[Int8], Int8),
        sig(F::Abs, &[Numeric], Numeric),
        sig(F::Abs, &[Float8], Float8),
    ];
    const RANDOM: &[Signature] = &[sig(F::Random, &[], Float8)];
    const PG_BACKEND_PID: &[Signature] = &[sig(F::PgBackendPid, &[], Int4)];
    const NEXTVAL: &[Signature] = &[sig(F::NextVal, &[Text], Int8)];
    const CURRVAL: &[Signature] = &[sig(F::CurrVal, &[Text], Int8)];
    const SETVAL: &[Signature] = &[sig(F::SetVal, &[Text, Int8], Int8), sig(F::SetVal, &[Text, Int8, Bool], Int8)];
    const SETSEED: &[Signature] = &[sig(F::SetSeed, &[Float8], Text)];
    const ROUND: &[Signature] =
        &[sig(F::Round, &[Numeric], Numeric), sig(F::Round, &[Float8], Float8), sig(F::Round, &[Numeric, Int4], Numeric)];
    const TRUNC: &[Signature] =
        &[sig(F::Trunc, &[Numeric], Numeric), sig(F::Trunc, &[Float8], Float8), sig(F::Trunc, &[Numeric, Int4], Numeric)];
    const CEIL: &[Signature] = &[sig(F::Ceil, &[Numeric], Numeric), sig(F::Ceil, &[Float8], Float8)];
    const FLOOR: &[Signature] = &[sig(F::Floor, &[Numeric], Numeric), sig(F::Floor, &[Float8], Float8)];
    const SIGN: &[Signature] = &[sig(F::Sign, &[Numeric], Numeric), sig(F::Sign, &[Float8], Float8)];
    const SQRT: &[Signature] = &[sig(F::Sqrt, &[Float8], Float8)];
    const POWER: &[Signature] =
        &[sig(F::Power, &[Float8, Float8], Float8), sig(F::Power, &[Numeric, Numeric], Numeric)];
    const MOD: &[Signature] = &[
        sig(F::Mod, &[Int4, Int4], Int4),
        sig(F::Mod, &[Int8, Int8], Int8),
        sig(F::Mod, &[Numeric, Numeric], Numeric),
    ];
    const REPLACE: &[Signature] = &[sig(F::Replace, &[Text, Text, Text], Text)];
    const STRPOS: &[Signature] = &[sig(F::StrPos, &[Text, Text], Int4)];
    const LEFT: &[Signature] = &[sig(F::Left, &[Text, Int4], Text)];
    const RIGHT: &[Signature] = &[sig(F::Right, &[Text, Int4], Text)];
    const BTRIM: &[Signature] = &[sig(F::BTrim, &[Text], Text), sig(F::BTrim, &[Text, Text], Text)];
    const LTRIM: &[Signature] = &[sig(F::LTrim, &[Text], Text), sig(F::LTrim, &[Text, Text], Text)];
    const RTRIM: &[Signature] = &[sig(F::RTrim, &[Text], Text), sig(F::RTrim, &[Text, Text], Text)];
    const REVERSE: &[Signature] = &[sig(F::Reverse, &[Text], Text)];
    const LPAD: &[Signature] = &[sig(F::LPad, &[Text, Int4], Text), sig(F::LPad, &[Text, Int4, Text], Text)];
    const RPAD: &[Signature] = &[sig(F::RPad, &[Text, Int4], Text), sig(F::RPad, &[Text, Int4, Text], Text)];
    const SPLIT_PART: &[Signature] = &[sig(F::SplitPart, &[Text, Text, Int4], Text)];
    const STARTS_WITH: &[Signature] = &[sig(F::StartsWith, &[Text, Text], Bool)];
    const LIKE: &[Signature] = &[sig(F::Like, &[Text, Text], Bool)];
    const NOTLIKE: &[Signature] = &[sig(F::NotLike, &[Text, Text], Bool)];
    const ILIKE: &[Signature] = &[sig(F::ILike, &[Text, Text], Bool)];
    const NOTILIKE: &[Signature] = &[sig(F::NotILike, &[Text, Text], Bool)];
    const TEXT_REGEX: &[Signature] = &[sig(F::RegexMatch, &[Text, Text], Bool)];
    const TEXT_IREGEX: &[Signature] = &[sig(F::RegexIMatch, &[Text, Text], Bool)];
    const TEXT_NREGEX: &[Signature] = &[sig(F::RegexNotMatch, &[Text, Text], Bool)];
    const TEXT_NIREGEX: &[Signature] = &[sig(F::RegexNotIMatch, &[Text, Text], Bool)];
    const SIMILAR: &[Signature] = &[sig(F::SimilarTo, &[Text, Text], Bool), sig(F::SimilarTo, &[Text, Text, Text], Bool)];
    const NOT_SIMILAR: &[Signature] =
        &[sig(F::NotSimilarTo, &[Text, Text], Bool), sig(F::NotSimilarTo, &[Text, Text, Text], Bool)];
    const REGEXP_REPLACE: &[Signature] = &[
        sig(F::RegexpReplace, &[Text, Text, Text], Text),
        sig(F::RegexpReplace, &[Text, Text, Text, Text], Text),
        sig(F::RegexpReplace, &[Text, Text, Text, Int4], Text),
        sig(F::RegexpReplace, &[Text, Text, Text, Int4, Int4], Text),
        sig(F::RegexpReplace, &[Text, Text, Text, Int4, Int4, Text], Text),
    ];
    const REGEXP_COUNT: &[Signature] = &[
        sig(F::RegexpCount, &[Text, Text], Int4),
        sig(F::RegexpCount, &[Text, Text, Int4], Int4),
        sig(F::RegexpCount, &[Text, Text, Int4, Text], Int4),
    ];
    const REGEXP_LIKE: &[Signature] =
        &[sig(F::RegexpLike, &[Text, Text], Bool), sig(F::RegexpLike, &[Text, Text, Text], Bool)];
    const REGEXP_SUBSTR: &[Signature] = &[
        sig(F::RegexpSubstr, &[Text, Text], Text),
        sig(F::RegexpSubstr, &[Text, Text, Int4], Text),
        sig(F::RegexpSubstr, &[Text, Text, Int4, Int4], Text),
        sig(F::RegexpSubstr, &[Text, Text, Int4, Int4, Text], Text),
        sig(F::RegexpSubstr, &[Text, Text, Int4, Int4, Text, Int4], Text),
    ];
    const SUBSTRING_PATTERN: &[Signature] = &[sig(F::SubstringPattern, &[Text, Text], Text)];
    const INITCAP: &[Signature] = &[sig(F::Initcap, &[Text], Text)];
    const OCTET_LENGTH: &[Signature] = &[sig(F::OctetLength, &[Text], Int4)];
    const BIT_LENGTH: &[Signature] = &[sig(F::BitLength, &[Text], Int4)];
    const CHR: &[Signature] = &[sig(F::Chr, &[Int4], Text)];
    const ASCII: &[Signature] = &[sig(F::Ascii, &[Text], Int4)];
    const TRANSLATE: &[Signature] = &[sig(F::Translate, &[Text, Text, Text], Text)];
    const TO_HEX: &[Signature] = &[sig(F::ToHex, &[Int4], Text), sig(F::ToHex, &[Int8], Text)];
    const QUOTE_IDENT: &[Signature] = &[sig(F::QuoteIdent, &[Text], Text)];
    const QUOTE_LITERAL: &[Signature] = &[sig(F::QuoteLiteral, &[Text], Text)];
    const QUOTE_NULLABLE: &[Signature] = &[sig(F::QuoteNullable, &[Text], Text)];
    const OVERLAY: &[Signature] =
        &[sig(F::Overlay, &[Text, Text, Int4], Text), sig(F::Overlay, &[Text, Text, Int4, Int4], Text)];
    const EXP: &[Signature] = &[sig(F::Exp, &[Float8], Float8)];
    const LN: &[Signature] = &[sig(F::Ln, &[Float8], Float8)];
    const LOG10: &[Signature] = &[sig(F::Log10, &[Float8], Float8)];
    const CBRT: &[Signature] = &[sig(F::Cbrt, &[Float8], Float8)];
    const PI: &[Signature] = &[sig(F::Pi, &[], Float8)];
    const DEGREES: &[Signature] = &[sig(F::Degrees, &[Float8], Float8)];
    const RADIANS: &[Signature] = &[sig(F::Radians, &[Float8], Float8)];
    const SIN: &[Signature] = &[sig(F::Sin, &[Float8], Float8)];
    const COS: &[Signature] = &[sig(F::Cos, &[Float8], Float8)];
    const TAN: &[Signature] = &[sig(F::Tan, &[Float8], Float8)];
    const COT: &[Signature] = &[sig(F::Cot, &[Float8], Float8)];
    const ASIN: &[Signature] = &[sig(F::Asin, &[Float8], Float8)];
    const ACOS: &[Signature] = &[sig(F::Acos, &[Float8], Float8)];
    const ATAN: &[Signature] = &[sig(F::Atan, &[Float8], Float8)];
    const ATAN2: &[Signature] = &[sig(F::Atan2, &[Float8, Float8], Float8)];
    const GCD: &[Signature] = &[sig(F::Gcd, &[Int4, Int4], Int4), sig(F::Gcd, &[Int8, Int8], Int8)];
    const LCM: &[Signature] = &[sig(F::Lcm, &[Int4, Int4], Int4), sig(F::Lcm, &[Int8, Int8], Int8)];
    const DIV: &[Signature] = &[sig(F::Div, &[Numeric, Numeric], Numeric)];
    const WIDTH_BUCKET: &[Signature] = &[sig(F::WidthBucket, &[Float8, Float8, Float8, Int4], Int4)];
    const SCALE: &[Signature] = &[sig(F::Scale, &[Numeric], Int4)];
    const BIT_AND: &[Signature] = &[sig(F::BitAnd, &[Int4, Int4], Int4), sig(F::BitAnd, &[Int8, Int8], Int8)];
    const BIT_OR: &[Signature] = &[sig(F::BitOr, &[Int4, Int4], Int4), sig(F::BitOr, &[Int8, Int8], Int8)];
    const BIT_XOR: &[Signature] = &[sig(F::BitXor, &[Int4, Int4], Int4), sig(F::BitXor, &[Int8, Int8], Int8)];
    const SHIFT_LEFT: &[Signature] = &[sig(F::ShiftLeft, &[Int4, Int4], Int4), sig(F::ShiftLeft, &[Int8, Int4], Int8)];
    const SHIFT_RIGHT: &[Signature] =
        &[sig(F::ShiftRight, &[Int4, Int4], Int4), sig(F::ShiftRight, &[Int8, Int4], Int8)];
    const BIT_NOT: &[Signature] = &[sig(F::BitNot, &[Int4], Int4), sig(F::BitNot, &[Int8], Int8)];
    match name {
        "textregexeq" => TEXT_REGEX,
        "texticregexeq" => TEXT_IREGEX,
        "textregexne" => TEXT_NREGEX,
        "texticregexne" => TEXT_NIREGEX,
        "similar_to" => SIMILAR,
        "not_similar_to" => NOT_SIMILAR,
        "regexp_replace" => REGEXP_REPLACE,
        "regexp_count" => REGEXP_COUNT,
        "regexp_like" => REGEXP_LIKE,
        "regexp_substr" => REGEXP_SUBSTR,
        "substring_pattern" => SUBSTRING_PATTERN,
        "initcap" => INITCAP,
        "octet_length" => OCTET_LENGTH,
        "bit_length" => BIT_LENGTH,
        "chr" => CHR,
        "ascii" => ASCII,
        "translate" => TRANSLATE,
        "to_hex" => TO_HEX,
        "quote_ident" => QUOTE_IDENT,
        "quote_literal" => QUOTE_LITERAL,
        "quote_nullable" => QUOTE_NULLABLE,
        "overlay" => OVERLAY,
        "exp" => EXP,
        "ln" => LN,
        "log" | "log10" => LOG10,
        "cbrt" => CBRT,
        "pi" => PI,
        "degrees" => DEGREES,
        "radians" => RADIANS,
        "sin" => SIN,
        "cos" => COS,
        "tan" => TAN,
        "cot" => COT,
        "asin" => ASIN,
        "acos" => ACOS,
        "atan" => ATAN,
        "atan2" => ATAN2,
        "gcd" => GCD,
        "lcm" => LCM,
        "div" => DIV,
        "width_bucket" => WIDTH_BUCKET,
        "scale" => SCALE,
        "int_and" => BIT_AND,
        "int_or" => BIT_OR,
        "int_xor" => BIT_XOR,
        "int_shl" => SHIFT_LEFT,
        "int_shr" => SHIFT_RIGHT,
        "int_not" => BIT_NOT,
        "md5" => MD5,
        "pg_size_pretty" => PG_SIZE_PRETTY,
        "hashint4" => HASHINT4,
        "hashint8" => HASHINT8,
        "hashtext" => HASHTEXT,
        "length" | "char_length" | "character_length" => LENGTH,
        "lower" => LOWER,
        "upper" => UPPER,
        "repeat" => REPEAT,
        "substr" | "substring" => SUBSTR,
        "abs" => ABS,
        "random" => RANDOM,
        "pg_backend_pid" => PG_BACKEND_PID,
        "nextval" => NEXTVAL,
        "currval" => CURRVAL,
        "setval" => SETVAL,
        "setseed" => SETSEED,
        "round" => ROUND,
        "trunc" => TRUNC,
        "ceil" | "ceiling" => CEIL,
        "floor" => FLOOR,
        "sign" => SIGN,
        "sqrt" => SQRT,
        "power" | "pow" => POWER,
        "mod" => MOD,
        "replace" => REPLACE,
        "strpos" => STRPOS,
        "left" => LEFT,
        "right" => RIGHT,
        "btrim" => BTRIM,
        "ltrim" => LTRIM,
        "rtrim" => RTRIM,
        "reverse" => REVERSE,
        "lpad" => LPAD,
        "rpad" => RPAD,
        "split_part" => SPLIT_PART,
        "starts_with" => STARTS_WITH,
        "like" | "textlike" => LIKE,
        "notlike" | "textnlike" => NOTLIKE,
        "texticlike" => ILIKE,
        "texticnlike" => NOTILIKE,
        _ => super::datetime::signatures(name),
    }
}

impl ScalarFunction {
    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            F::Md5 => "md5",
            F::PgSizePretty => "pg_size_pretty",
            F::HashInt4 => "hashint4",
            F::HashInt8 => "hashint8",
            F::HashText => "hashtext",
            F::Length => "length",
            F::Lower => "lower",
            F::Upper => "upper",
            F::Repeat => "repeat",
            F::Substr => "substr",
            F::Abs => "abs",
            F::Random => "random",
            F::PgBackendPid => "pg_backend_pid",
            F::SetSeed => "setseed",
            F::NextVal => "nextval",
            F::CurrVal => "currval",
            F::SetVal => "setval",
            F::Like => "like",
            F::NotLike => "notlike",
            F::ILike => "ilike",
            F::NotILike => "notilike",
            F::Round => "round",
            F::Trunc => "trunc",
            F::Ceil => "ceil",
            F::Floor => "floor",
            F::Sign => "sign",
            F::Sqrt => "sqrt",
            F::Power => "power",
            F::Mod => "mod",
            F::Replace => "replace",
            F::StrPos => "strpos",
            F::Left => "left",
            F::Right => "right",
            F::BTrim => "btrim",
            F::LTrim => "ltrim",
            F::RTrim => "rtrim",
            F::Reverse => "reverse",
            F::LPad => "lpad",
            F::RPad => "rpad",
            F::SplitPart => "split_part",
            F::StartsWith => "starts_with",
            F::NullIf => "nullif",
            F::Greatest => "greatest",
            F::Least => "least",
            F::RegexMatch => "textregexeq",
            F::RegexIMatch => "texticregexeq",
            F::RegexNotMatch => "textregexne",
            F::RegexNotIMatch => "texticregexne",
            F::SimilarTo => "similar_to",
            F::NotSimilarTo => "not_similar_to",
            F::RegexpReplace => "regexp_replace",
            F::RegexpCount => "regexp_count",
            F::RegexpLike => "regexp_like",
            F::RegexpSubstr => "regexp_substr",
            F::SubstringPattern => "substring",
            F::Initcap => "initcap",
            F::OctetLength => "octet_length",
            F::BitLength => "bit_length",
            F::Chr => "chr",
            F::Ascii => "ascii",
            F::Translate => "translate",
            F::ToHex => "to_hex",
            F::QuoteIdent => "quote_ident",
            F::QuoteLiteral => "quote_literal",
            F::QuoteNullable => "quote_nullable",
            F::Overlay => "overlay",
            F::Concat => "concat",
            F::ConcatWs => "concat_ws",
            F::Format => "format",
            F::NumNulls => "num_nulls",
            F::NumNonNulls => "num_nonnulls",
            F::Exp => "exp",
            F::Ln => "ln",
            F::Log10 => "log",
            F::Cbrt => "cbrt",
            F::Pi => "pi",
            F::Degrees => "degrees",
            F::Radians => "radians",
            F::Sin => "sin",
            F::Cos => "cos",
            F::Tan => "tan",
            F::Cot => "cot",
            F::Asin => "asin",
            F::Acos => "acos",
            F::Atan => "atan",
            F::Atan2 => "atan2",
            F::Gcd => "gcd",
            F::Lcm => "lcm",
            F::Div => "div",
            F::WidthBucket => "width_bucket",
            F::Scale => "scale",
            F::BitAnd => "int_and",
            F::BitOr => "int_or",
            F::BitXor => "int_xor",
            F::ShiftLeft => "int_shl",
            F::ShiftRight => "int_shr",
            F::BitNot => "int_not",
            F::DateTime(f) => f.name(),
            F::Array(f) => f.name(),
        }
    }

    /// Whether two calls with equal arguments may return different results (or have a
    /// side effect), so the call must not be constant-folded or deduplicated.
    pub fn is_volatile(self) -> bool {
        matches!(self, F::Random | F::SetSeed | F::NextVal | F::CurrVal | F::SetVal)
            || matches!(self, F::DateTime(f) if f.is_volatile())
    }

    /// Whether a NULL argument gives NULL without calling the function: every function
    /// except the conditional expressions PostgreSQL writes as functions.
    pub fn is_strict(self) -> bool {
        !matches!(
            self,
            F::NullIf | F::Greatest | F::Least | F::Concat | F::ConcatWs | F::Format | F::NumNulls | F::NumNonNulls | F::QuoteNullable | F::Array(_)
        )
    }

    /// Calls the function on already evaluated, already resolved arguments.
    /// Strict functions: any NULL argument gives NULL.
    /// Is this `length(text)`?
    pub fn is_text_length(self) -> bool {
        matches!(self, F::Length)
    }

    /// Is this `LIKE`, `ILIKE` or their negations?
    pub fn is_like(self) -> bool {
        matches!(self, F::Like | F::NotLike | F::ILike | F::NotILike)
    }

    /// `text LIKE pattern` (or `ILIKE`, or a negation: see [`is_like`](Self::is_like)).
    pub fn like(self, text: &str, pattern: &str, escape: Option<&str>) -> Result<Datum> {
        let pattern = super::like::compiled(pattern, escape, matches!(self, F::ILike | F::NotILike))?;
        Ok(Datum::Bool(pattern.matches(text)? != matches!(self, F::NotLike | F::NotILike)))
    }

    pub fn call(self, args: &[Datum], ctx: &EvalContext) -> Result<Datum> {
        match (self, args) {
            (F::NullIf, [value, other]) => return null_if(value, other),
            (F::Array(f), _) => return super::array::call(f, args),
            (F::Greatest | F::Least, _) => return Ok(extreme(args, self == F::Greatest)),
            (F::Concat | F::ConcatWs | F::Format | F::NumNulls | F::NumNonNulls | F::QuoteNullable, _) => {
                return super::text::call_variadic(self, args)
            }
            _ => {}
        }
        if args.iter().any(Datum::is_null) {
            return Ok(Datum::Null);
        }
        match (self, args) {
            (F::Md5, [Datum::Text(s)]) => Ok(Datum::Text(weft_common::md5::md5_hex(s.as_bytes()))),
            (F::PgSizePretty, [Datum::Int8(bytes)]) => Ok(Datum::Text(size_pretty(i128::from(*bytes)))),
            (F::PgSizePretty, [Datum::Numeric(bytes)]) => Ok(Datum::Text(size_pretty_numeric(bytes))),
            (F::HashInt4, [Datum::Int4(v)]) => Ok(Datum::Int4(weft_common::hash::hashint4(*v))),
            (F::HashInt8, [Datum::Int8(v)]) => Ok(Datum::Int4(weft_common::hash::hashint8(*v))),
            (F::HashText, [Datum::Text(s)]) => Ok(Datum::Int4(weft_common::hash::hashtext(s))),
            (F::Length, [Datum::Text(s)]) => Ok(Datum::Int4(char_count_i32(s)?)),
            // The C collation: only ASCII letters change case, as PostgreSQL does under LC_CTYPE=C.
            (F::Lower, [Datum::Text(s)]) => Ok(Datum::Text(s.to_ascii_lowercase())),
            (F::Upper, [Datum::Text(s)]) => Ok(Datum::Text(s.to_ascii_uppercase())),
            (F::Repeat, [Datum::Text(s), Datum::Int4(n)]) => repeat(s, *n).map(Datum::Text),
            (F::Substr, [Datum::Text(s), Datum::Int4(start)]) => Ok(Datum::Text(substr(s, *start, None)?)),
            (F::Substr, [Datum::Text(s), Datum::Int4(start), Datum::Int4(len)]) => {
                Ok(Datum::Text(substr(s, *start, Some(*len))?))
            }
            (F::Abs, [v]) => abs(v),
            (F::Random, []) => Ok(Datum::Float8(ctx.random())),
            (F::PgBackendPid, []) => Ok(Datum::Int4(ctx.backend_pid)),
            (F::SetSeed, [Datum::Float8(seed)]) => ctx.set_seed(*seed).map(|()| Datum::Null),
            (F::NextVal, [Datum::Text(name)]) => ctx.sequences.next_value(name, &ctx.session_sequences).map(Datum::Int8),
            (F::CurrVal, [Datum::Text(name)]) => ctx.sequences.current_value(name, &ctx.session_sequences).map(Datum::Int8),
            (F::SetVal, [Datum::Text(name), Datum::Int8(value)]) => {
                ctx.sequences.set_value(name, *value, true, &ctx.session_sequences).map(Datum::Int8)
            }
            (F::SetVal, [Datum::Text(name), Datum::Int8(value), Datum::Bool(called)]) => {
                ctx.sequences.set_value(name, *value, *called, &ctx.session_sequences).map(Datum::Int8)
            }
            (F::Like | F::NotLike | F::ILike | F::NotILike, [Datum::Text(text), Datum::Text(pattern), escape @ ..]) => {
                let escape = match escape {
                    [Datum::Text(e)] => Some(e.as_str()),
                    _ => None,
                };
                self.like(text, pattern, escape)
            }
            (F::Round | F::Trunc | F::Ceil | F::Floor | F::Sign | F::Sqrt | F::Power | F::Mod, _)
            | (F::Exp | F::Ln | F::Log10 | F::Cbrt | F::Pi | F::Degrees | F::Radians | F::Sin | F::Cos | F::Tan, _)
            | (F::Cot | F::Asin | F::Acos | F::Atan | F::Atan2 | F::Gcd | F::Lcm | F::Div | F::WidthBucket, _)
            | (F::Scale | F::BitAnd | F::BitOr | F::BitXor | F::ShiftLeft | F::ShiftRight | F::BitNot, _) => {
                super::math::call(self, args)
            }
            (F::RegexMatch | F::RegexIMatch | F::RegexNotMatch | F::RegexNotIMatch | F::SimilarTo | F::NotSimilarTo, _)
            | (F::RegexpReplace | F::RegexpCount | F::RegexpLike | F::RegexpSubstr | F::SubstringPattern, _) => {
                super::regexp::call(self, args)
            }
            (F::Initcap | F::OctetLength | F::BitLength | F::Chr | F::Ascii | F::Translate | F::ToHex, _)
            | (F::QuoteIdent | F::QuoteLiteral | F::Overlay, _) => super::text::call(self, args),
            (F::Replace | F::StrPos | F::Left | F::Right | F::BTrim | F::LTrim | F::RTrim | F::Reverse, _)
            | (F::LPad | F::RPad | F::SplitPart | F::StartsWith, _) => super::text::call(self, args),
            (F::DateTime(f), _) => super::datetime::call(f, args, &ctx.clock),
            _ => Err(Error::internal(format!("{}() called with unresolved arguments {args:?}", self.name()))),
        }
    }
}

/// `NULLIF(value, other)`, both already in the type of the `=` the binder resolved.
fn null_if(value: &Datum, other: &Datum) -> Result<Datum> {
    let equal = !value.is_null() && !other.is_null() && compare_datums(value, other).is_eq();
    Ok(if equal { Datum::Null } else { value.clone() })
}

/// `GREATEST` / `LEAST`: NULLs are ignored; NULL only when every argument is.
fn extreme(args: &[Datum], greatest: bool) -> Datum {
    let wanted = if greatest { Ordering::Greater } else { Ordering::Less };
    let mut best: Option<&Datum> = None;
    for arg in args.iter().filter(|a| !a.is_null()) {
        if best.is_none_or(|b| compare_datums(arg, b) == wanted) {
            best = Some(arg);
        }
    }
    best.cloned().unwrap_or(Datum::Null)
}

/// `pg_size_pretty`'s units above bytes, each 1024 times the one before.
const SIZE_UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];

/// Below this many bytes (or units), `pg_size_pretty` keeps the unit it has.
const SIZE_UNIT_LIMIT: i128 = 10 * 1024;

/// `pg_size_pretty`: bytes below 10 kB, else the first unit that keeps the number below
/// 10240 (PB at most), rounded half away from zero from the unit's halves.
fn size_pretty(bytes: i128) -> String {
    if bytes.abs() < SIZE_UNIT_LIMIT {
        return format!("{bytes} bytes");
    }
    // Right shifts round toward minus infinity, as PostgreSQL's do.
    let mut halves = bytes >> 9;
    let mut unit = 0;
    while halves.abs() >= 2 * SIZE_UNIT_LIMIT - 1 && unit + 1 < SIZE_UNITS.len() {
        halves >>= 10;
        unit += 1;
    }
    let rounded = (halves + if halves < 0 { -1 } else { 1 }) / 2;
    format!("{rounded} {}", SIZE_UNITS[unit])
}

/// `pg_size_pretty(numeric)`: a number of bytes below 10 kB is printed as it is (`1.5
/// bytes`); above, its fraction is dropped before the units are chosen, as PostgreSQL's
/// truncating division drops it.
fn size_pretty_numeric(bytes: &weft_common::Numeric) -> String {
    // PostgreSQL's loop never stops below PB for these: `NaN PB`, `Infinity PB`.
    if bytes.is_special() {
        return format!("{bytes} PB");
    }
    let (mantissa, scale) = (bytes.mantissa, bytes.scale);
    let whole = mantissa / 10i128.pow(u32::from(scale).min(38));
    if whole.abs() < SIZE_UNIT_LIMIT {
        return format!("{bytes} bytes");
    }
    // Divisions, not shifts: PostgreSQL's numeric path truncates toward zero.
    let mut halves = whole / 512;
    let mut unit = 0;
    while halves.abs() >= 2 * SIZE_UNIT_LIMIT - 1 && unit + 1 < SIZE_UNITS.len() {
        halves /= 1024;
        unit += 1;
    }
    let rounded = (halves + if halves < 0 { -1 } else { 1 }) / 2;
    format!("{rounded} {}", SIZE_UNITS[unit])
}

pub(crate) fn char_count_i32(s: &str) -> Result<i32> {
    // Most text is ASCII, whose test runs a word at a time and is done: counting
    // characters costs several times more on short strings.
    let count = if s.is_ascii() { s.len() } else { s.chars().count() };
    i32::try_from(count).map_err(|_| Error::out_of_range("integer"))
}

/// `repeat(text, count)`: a negative count gives `''`; the result must fit in
/// `MaxAllocSize` together with its 4-byte varlena header, as in PostgreSQL.
pub fn repeat(s: &str, count: i32) -> Result<String> {
    const VARLENA_HEADER_BYTES: usize = 4;
    let count = usize::try_from(count).unwrap_or(0);
    let total = s.len().checked_mul(count).and_then(|t| t.checked_add(VARLENA_HEADER_BYTES));
    match total {
        Some(total) if total <= VALUE_SIZE_BYTES_MAX => Ok(s.repeat(count)),
        _ => Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "requested length too large")),
    }
}

/// `substr(text, start [, length])` in characters, 1-based (`text_substring`): the
/// window `[start, start + length)` is clipped to the string, so a start before 1
/// shortens the result rather than shifting it.
pub fn substr(s: &str, start: i32, length: Option<i32>) -> Result<String> {
    let start = i64::from(start);
    let end = match length {
        None => i64::MAX,
        Some(len) if len < 0 => {
            return Err(Error::new(SqlState("22011"), "negative substring length not allowed"));
        }
        Some(len) => start + i64::from(len),
    };
    let first = start.max(1);
    if end <= first {
        return Ok(String::new());
    }
    let skip = (first - 1) as usize;
    let take = usize::try_from(end - first).unwrap_or(usize::MAX);
    Ok(s.chars().skip(skip).take(take).collect())
}

/// `abs` for each numeric type; `abs(i32::MIN)` overflows as in PostgreSQL.
pub fn abs(v: &Datum) -> Result<Datum> {
    match v {
        Datum::Int4(x) => x.checked_abs().map(Datum::Int4).ok_or_else(|| Error::out_of_range("integer")),
        Datum::Int8(x) => x.checked_abs().map(Datum::Int8).ok_or_else(|| Error::out_of_range("bigint")),
        Datum::Float8(x) => Ok(Datum::Float8(x.abs())),
        Datum::Numeric(n) => n.abs().map(Datum::Numeric),
        other => Err(Error::internal(format!("abs() of {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_g_format_matches_printf() {
        assert_eq!(format_c_g(2.0), "2");
        assert_eq!(format_c_g(1.5), "1.5");
        assert_eq!(format_c_g(-1.25), "-1.25");
        assert_eq!(format_c_g(1e10), "1e+10");
        assert_eq!(format_c_g(123456.0), "123456");
        assert_eq!(format_c_g(1234567.0), "1.23457e+06");
        assert_eq!(format_c_g(0.0001), "0.0001");
        assert_eq!(format_c_g(0.00001), "1e-05");
        assert_eq!(format_c_g(f64::NAN), "nan");
    }

    #[test]
    fn size_pretty_matches_postgres() {
        // Expected values printed by PostgreSQL 15.
        for (bytes, expected) in [
            (0, "0 bytes"),
            (10239, "10239 bytes"),
            (10240, "10 kB"),
            (-10240, "-10 kB"),
            (10 * 1024 * 1024 - 1, "10 MB"),
            (10_485_247, "10239 kB"),
            (-10_485_248, "-10 MB"),
            (123_456_789, "118 MB"),
            (1_234_567_890_123, "1150 GB"),
            (i64::MAX, "8192 PB"),
            (i64::MIN, "-8192 PB"),
        ] {
            assert_eq!(size_pretty(i128::from(bytes)), expected, "{bytes}");
        }
        for (bytes, expected) in
            [("1.5", "1.5 bytes"), ("10239.6", "10239.6 bytes"), ("123456789012345678901234567890", "109651655766237 PB")]
        {
            let numeric = weft_common::Numeric::parse(bytes).unwrap();
            assert_eq!(size_pretty_numeric(&numeric), expected, "{bytes}");
        }
    }
}
