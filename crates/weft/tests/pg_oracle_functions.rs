//! Built-in functions and operators compared with PostgreSQL 15: regular expressions
//! (`~` and its variants, `regexp_*`, `substring(FROM pattern)`, `SIMILAR TO`), the text
//! functions (`concat`, `format`, `initcap`, `translate`, ...), the float8 and numeric math
//! functions (`^`, `exp`, `ln`, trigonometry, `gcd`, `div`, `width_bucket`), and the integer
//! bitwise operators; over a table with NULLs and in WHERE, GROUP BY and ORDER BY, serial,
//! with parallel workers and at a tiny work_mem; and PostgreSQL's errors.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE w (id int, s text, a int, b bigint, n numeric, f float8)",
    "INSERT INTO w SELECT i, CASE WHEN i % 11 = 0 THEN NULL ELSE substr(md5(i::text), 1, 3 + i % 7) || CASE WHEN i % 3 = 0 THEN ' Word x' ELSE '' END END, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 40 - 10 END, (i * 7919) % 1000 - 300, CASE WHEN i % 17 = 0 THEN NULL ELSE (i % 23) / 4.0 END, (i % 9) / 3.0 - 1 FROM generate_series(1, 600) i",
];

const QUERIES: &[&str] = &[
    // Regular expressions.
    "SELECT id, s ~ '^[0-9]', s ~* 'A', s !~ '[a-c]{2}', s !~* '^.{5}$' FROM w",
    "SELECT id FROM w WHERE s ~ '\\d[a-f]\\d' ORDER BY id",
    "SELECT id, regexp_replace(s, '[0-9]', '#'), regexp_replace(s, '[0-9]', '#', 'g'), regexp_replace(s, '([a-f])([0-9])', '\\2\\1', 'g') FROM w",
    "SELECT id, regexp_replace(s, 'W(o)rd', '<\\&|\\1>'), regexp_replace(s, 'X', 'y', 'gi'), regexp_replace(s, '[a-z]', '_', 2, 3) FROM w",
    "SELECT id, regexp_count(s, '[0-9]'), regexp_count(s, '[a-f]', 3), regexp_like(s, 'word', 'i'), regexp_substr(s, '[0-9]+', 1, 2) FROM w",
    "SELECT id, substring(s FROM '[0-9]+'), substring(s FROM '([a-f])[0-9]'), substring(s, '^(.)(.)') FROM w",
    "SELECT id, s SIMILAR TO '[0-9]%', s NOT SIMILAR TO '%(a|b)%', s SIMILAR TO '%Word_x' FROM w",
    "SELECT 'abc' ~ 'B', 'abc' ~* 'B', 'a.c' SIMILAR TO 'a.c', 'abc' SIMILAR TO 'a.c', 'a%c' SIMILAR TO 'a#%c' ESCAPE '#', 'foo bar' ~ '\\mbar\\M', 'x' ~ '[[:alpha:]]'",
    "SELECT regexp_replace('one two three', '\\s+', ' ', 'g'), regexp_replace('aaa', 'a*', 'X', 'g'), regexp_count('abcabc', ''), regexp_replace(E'a\\nb', '.', 'x', 'g'), replace(regexp_replace(E'a\\nb', '^b', 'B', 'n'), E'\\n', '/')",
    "SELECT (regexp_count(s, '[0-9]') > 2) AS many, count(*) FROM w GROUP BY 1 ORDER BY 1",
    // Text functions.
    "SELECT id, concat(s, '-', a, '-', n, NULL, f), concat_ws('/', s, a, NULL, b), concat_ws(NULL, s), initcap(s), octet_length(s), bit_length(s) FROM w",
    "SELECT id, translate(s, 'abc', 'XY'), ascii(s), upper(left(s, 1)) || lower(substr(s, 2)), overlay(s PLACING 'ZZ' FROM 2), overlay(s PLACING '' FROM 3 FOR 2) FROM w",
    "SELECT id, format('%s|%5s|%-5s|%I|%L|%%', a, a, s, coalesce(s, 'n'), s), format('%2$s %1$s', s, a), format('%L', NULL::text), format(NULL, 1) FROM w",
    "SELECT id, num_nulls(s, a, n), num_nonnulls(s, a, n, 1), quote_ident(s), quote_literal(s), quote_nullable(s), quote_nullable(a) FROM w",
    "SELECT chr(65), chr(233), ascii(''), to_hex(255), to_hex(-1), to_hex(-1::bigint), to_hex(4294967296), quote_ident('Mixed'), quote_ident('select'), quote_ident('ok_1'), quote_literal(E'a\\\\b''c')",
    "SELECT format('%s %s', 'a', 'b'), format('%*s|', 6, 'ab'), format('%-*s|', 6, 'ab'), format('%3$s %1$s %s', 'a', 'b', 'c'), concat(true, false, 1.50, 2::bigint)",
    "SELECT initcap('hello wORLD-foo_bar 3rd'), translate('12345', '143', 'ax'), overlay('Txxxxas' placing 'hom' from 2 for 4), octet_length('é'), bit_length('ab')",
    // Math.
    "SELECT id, a ^ 2, 2 ^ a, f ^ 2, n ^ 2, n ^ 0 FROM w WHERE a BETWEEN -5 AND 20",
    "SELECT id, exp(f), ln(f + 2), log(f + 2), log10(f + 2), sin(f), cos(f), tan(f), atan(f), atan2(f, 2), degrees(f), radians(f) FROM w",
    "SELECT id, asin(f / 2), acos(f / 2), cot(f + 3) FROM w",
    "SELECT id, gcd(a, 12), lcm(a, 4), gcd(b, 150::bigint), div(n, 1.5), div(b, 7), width_bucket(f, -1, 2, 6), width_bucket(a, 30, -10, 4), scale(n) FROM w",
    "SELECT pi(), 2 ^ 0.5::float8, 2.0 ^ 10, 1.5 ^ 3, 2 ^ -2, (-2.0) ^ 3, 10 ^ 20.0, power(2.5, 2), power(2, 3), 0.0 ^ 0",
    "SELECT gcd(0, 0), gcd(-12, 18), lcm(-4, 6), lcm(0, 5), div(7, 2), div(-7, 2), div(7.9, 2.1), width_bucket(5, 0, 10, 5), width_bucket(-1, 0, 10, 5), width_bucket(10, 0, 10, 5)",
    // Bitwise operators.
    "SELECT id, a & 7, a | 8, a # 5, a << 2, a >> 1, ~a, b & 255, b << 3 FROM w",
    "SELECT 5 & 3, 5 | 3, 5 # 3, 1 << 31, 1 << 33, -16 >> 2, ~0, 1::bigint << 40, |/ 16.0, ||/ 8.0, @ -5",
    "SELECT a & 3 AS k, count(*), sum(b # 1) FROM w GROUP BY 1 ORDER BY 1",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT 'a' ~ '('",
    "SELECT regexp_replace('a', 'a', 'b', 'z')",
    "SELECT regexp_count('a', 'a', 0)",
    "SELECT regexp_count('a', 'a', 1, 'g')",
    "SELECT 1 ~ 'a'",
    "SELECT ln(0.0::float8)",
    "SELECT ln(-1::float8)",
    "SELECT asin(2::float8)",
    "SELECT exp(1000::float8)",
    "SELECT 0.0 ^ -1",
    "SELECT (-8.0) ^ 0.5",
    "SELECT div(1, 0)",
    "SELECT width_bucket(1, 1, 1, 3)",
    "SELECT width_bucket(1, 0, 2, 0)",
    "SELECT gcd(-2147483648, 0)",
    "SELECT lcm(2147483647, 2147483646)",
    "SELECT chr(0)",
    "SELECT format('%s %s', 1)",
    "SELECT format('%x', 1)",
    "SELECT format('%I', NULL)",
    "SELECT overlay('abc' placing 'x' from 0)",
    "SELECT concat()",
];

#[test]
fn functions_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
