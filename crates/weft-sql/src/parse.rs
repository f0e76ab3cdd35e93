//! SQL text → sqlparser statements, with PostgreSQL syntax sqlparser lacks.
//!
//! `a [NOT] BETWEEN SYMMETRIC x AND y` (and `ASYMMETRIC`, the plain form): sqlparser
//! 0.63 has no such words, so they are taken out of the token stream before parsing and
//! each symmetric BETWEEN is rewritten afterwards into what PostgreSQL's
//! `transformAExprBetween` makes of it: `(a BETWEEN x AND y) OR (a BETWEEN y AND x)`, or
//! for NOT BETWEEN `(a NOT BETWEEN x AND y) AND (a NOT BETWEEN y AND x)` (like PostgreSQL,
//! the operands are evaluated once per use). The rewritten AST prints as SQL that means
//! the same, so text kept from it (a column default) parses back alike.
//!
//! A parsed `Expr::Between` carries no position of its own; its BETWEEN keyword is the
//! last one before the start of its lower bound (every token between them — SYMMETRIC, a
//! sign, an opening parenthesis — precedes the bound's first spanned token). A symmetric
//! keyword that matches no node is refused rather than read as the plain form.
//! Statements without the word SYMMETRIC are parsed as before, token for token.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned, Statement, VisitorMut};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};
use weft_common::{Cursor, Error, Result};

/// Parse SQL text holding statements separated by `;`.
pub(crate) fn parse_statements(sql: &str) -> Result<Vec<Statement>> {
    let mut statements = parse_with_symmetric(sql)?;
    if sql.to_ascii_lowercase().contains("unnest") {
        let _ = crate::ast_walk::walk_mut(&mut statements, &mut UnnestRewriter);
    }
    if sql.to_ascii_lowercase().contains("lateral") {
        let _ = crate::ast_walk::walk_mut(&mut statements, &mut LateralFunctionRewriter);
    }
    Ok(statements)
}

/// `unnest(...)` in FROM, which sqlparser reads as its own node, is read as the function
/// call it is in PostgreSQL, so that it is planned (and found LATERAL) as one.
struct UnnestRewriter;

impl VisitorMut for UnnestRewriter {
    type Break = ();

    fn post_visit_table_factor(&mut self, factor: &mut ast::TableFactor) -> ControlFlow<()> {
        if let ast::TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_offset_alias: None, with_ordinality } = factor {
            let args = array_exprs.drain(..).map(|e| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))).collect();
            *factor = function_in_from(ast::ObjectName::from(vec![ast::Ident::new("unnest")]), alias.take(), args, *with_ordinality);
        }
        ControlFlow::Continue(())
    }
}

/// `LATERAL f(...)` in FROM is read as `f(...)`: a function in FROM may read the columns
/// of earlier FROM items with or without the keyword, as in PostgreSQL (`lateral.rs`).
struct LateralFunctionRewriter;

impl VisitorMut for LateralFunctionRewriter {
    type Break = ();

    fn post_visit_table_factor(&mut self, factor: &mut ast::TableFactor) -> ControlFlow<()> {
        if let ast::TableFactor::Function { name, args, with_ordinality, alias, .. } = factor {
            *factor = function_in_from(name.clone(), alias.take(), std::mem::take(args), *with_ordinality);
        }
        ControlFlow::Continue(())
    }
}

/// A function call in FROM in the one form the planner reads: a table with arguments.
fn function_in_from(name: ast::ObjectName, alias: Option<ast::TableAlias>, args: Vec<ast::FunctionArg>, with_ordinality: bool) -> ast::TableFactor {
    ast::TableFactor::Table {
        name,
        alias,
        args: Some(ast::TableFunctionArgs { args, settings: None }),
        with_hints: Vec::new(),
        version: None,
        with_ordinality,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_hints: Vec::new(),
    }
}

/// [`parse_statements`] before rewrites other than BETWEEN SYMMETRIC, which sqlparser does
/// not read: its keyword is taken out of the tokens and the BETWEEN rewritten after.
fn parse_with_symmetric(sql: &str) -> Result<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let lower = sql.to_ascii_lowercase();
    let grouping = lower.contains("cube") || lower.contains("rollup") || lower.contains("grouping");
    if !lower.contains("symmetric") && !grouping {
        return Parser::parse_sql(&dialect, sql).map_err(|e| syntax_error(e, sql));
    }
    let mut tokens = Tokenizer::new(&dialect, sql).with_unescape(true).tokenize_with_location().map_err(|e| syntax_error(e.into(), sql))?;
    if grouping {
        wrap_grouping_set_elements(&mut tokens);
    }
    let mut symmetric = BTreeSet::new();
    let mut previous_word: Option<(Keyword, Location)> = None;
    tokens.retain(|t| {
        let Token::Word(word) = &t.token else {
            if !matches!(t.token, Token::Whitespace(_)) {
                previous_word = None;
            }
            return true;
        };
        let unquoted = word.quote_style.is_none();
        if let (Some((Keyword::BETWEEN, between)), true) = (previous_word, unquoted) {
            if matches!(word.keyword, Keyword::SYMMETRIC | Keyword::ASYMMETRIC) {
                if word.keyword == Keyword::SYMMETRIC {
                    symmetric.insert(between);
                }
                previous_word = None;
                return false;
            }
        }
        previous_word = unquoted.then_some((word.keyword, t.span.start));
        true
    });
    let betweens: Vec<Location> = tokens
        .iter()
        .filter(|t| matches!(&t.token, Token::Word(w) if w.keyword == Keyword::BETWEEN && w.quote_style.is_none()))
        .map(|t| t.span.start)
        .collect();
    let mut statements = Parser::new(&dialect).with_tokens_with_locations(tokens).parse_statements().map_err(|e| syntax_error(e, sql))?;
    if symmetric.is_empty() {
        return Ok(statements);
    }
    let mut rewriter = SymmetricRewriter { betweens, symmetric };
    let _ = crate::ast_walk::walk_mut(&mut statements, &mut rewriter);
    if !rewriter.symmetric.is_empty() {
        return Err(Error::not_supported("BETWEEN SYMMETRIC is not supported in this position"));
    }
    Ok(statements)
}

/// In `CUBE (...)`, `ROLLUP (...)` and `GROUPING SETS (...)` sqlparser reads an element that
/// starts with `(` as a parenthesized list and fails on what follows its `)`, as in
/// `CUBE ((a)::text, b)`, which PostgreSQL reads as an expression. Such an element is put
/// in parentheses of its own, `CUBE (((a)::text), b)`: a set of one expression, which
/// groups as the bare expression does.
fn wrap_grouping_set_elements(tokens: &mut Vec<TokenWithSpan>) {
    let next_solid = |tokens: &[TokenWithSpan], mut i: usize| {
        while i < tokens.len() && matches!(tokens[i].token, Token::Whitespace(_)) {
            i += 1;
        }
        i
    };
    let is_word = |t: &TokenWithSpan, k: Keyword| matches!(&t.token, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    // The `(` opening each list, found before any insertion.
    let mut opens = Vec::new();
    for i in 0..tokens.len() {
        let after = if is_word(&tokens[i], Keyword::CUBE) || is_word(&tokens[i], Keyword::ROLLUP) {
            i + 1
        } else if is_word(&tokens[i], Keyword::GROUPING) {
            let sets = next_solid(tokens, i + 1);
            if sets < tokens.len() && is_word(&tokens[sets], Keyword::SETS) {
                sets + 1
            } else {
                continue;
            }
        } else {
            continue;
        };
        let open = next_solid(tokens, after);
        if open < tokens.len() && tokens[open].token == Token::LParen {
            opens.push(open);
        }
    }
    // The last list first, so the positions of earlier ones stay right.
    for &open in opens.iter().rev() {
        let mut start = open + 1;
        loop {
            start = next_solid(tokens, start);
            if start >= tokens.len() || tokens[start].token == Token::RParen {
                break;
            }
            // The element's end: the `,` or `)` at the list's depth.
            let (mut depth, mut end, mut first_close) = (0usize, start, None);
            while end < tokens.len() {
                match tokens[end].token {
                    Token::LParen => depth += 1,
                    Token::RParen if depth == 0 => break,
                    Token::RParen => {
                        depth -= 1;
                        if depth == 0 && first_close.is_none() {
                            first_close = Some(end);
                        }
                    }
                    Token::Comma if depth == 0 => break,
                    Token::EOF | Token::SemiColon => break,
                    _ => {}
                }
                end += 1;
            }
            let wrap = tokens[start].token == Token::LParen
                && first_close.is_some_and(|close| next_solid(tokens, close + 1) < end);
            if wrap {
                let (from, to) = (tokens[start].span, tokens[end - 1].span);
                tokens.insert(end, TokenWithSpan::new(Token::RParen, to));
                tokens.insert(start, TokenWithSpan::new(Token::LParen, from));
                end += 2;
            }
            if end >= tokens.len() || tokens[end].token != Token::Comma {
                break;
            }
            start = end + 1;
        }
    }
}

/// Rewrites the BETWEEN nodes whose keyword was followed by SYMMETRIC.
struct SymmetricRewriter {
    /// Where every BETWEEN keyword starts, in text order.
    betweens: Vec<Location>,
    /// Where the symmetric ones start; each is removed once rewritten.
    symmetric: BTreeSet<Location>,
}

impl VisitorMut for SymmetricRewriter {
    type Break = ();

    /// After the node's operands: a BETWEEN inside a bound is rewritten first, and the
    /// new nodes are not visited again.
    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Between { expr: operand, negated, low, high } = expr else { return ControlFlow::Continue(()) };
        let low_start = low.span().start;
        if low_start == Location::from((0, 0)) {
            return ControlFlow::Continue(());
        }
        let keyword = match self.betweens.partition_point(|b| *b < low_start) {
            0 => return ControlFlow::Continue(()),
            n => self.betweens[n - 1],
        };
        if !self.symmetric.remove(&keyword) {
            return ControlFlow::Continue(());
        }
        let between = |low: &ast::Expr, high: &ast::Expr| {
            ast::Expr::Nested(Box::new(ast::Expr::Between {
                expr: operand.clone(),
                negated: *negated,
                low: Box::new(low.clone()),
                high: Box::new(high.clone()),
            }))
        };
        // NOT BETWEEN SYMMETRIC holds when neither order holds.
        let combine = if *negated { ast::BinaryOperator::And } else { ast::BinaryOperator::Or };
        *expr = ast::Expr::Nested(Box::new(ast::Expr::BinaryOp {
            left: Box::new(between(low, high)),
            op: combine,
            right: Box::new(between(high, low)),
        }));
        ControlFlow::Continue(())
    }
}

/// sqlparser's message → PostgreSQL's `syntax error at or near "x"`, pointing at the token
/// (or just past the end of `sql`, for `at end of input`). PostgreSQL says nothing more, so
/// sqlparser's own words (`Expected: ..., found: ...`) are kept as the detail only when
/// there is no place to point at.
pub(crate) fn syntax_error(err: ParserError, sql: &str) -> Error {
    let text = err.to_string();
    let said = text.strip_prefix("sql parser error: ").unwrap_or(&text);
    let (said, cursor) = match said.rsplit_once(" at Line: ") {
        Some((before, place)) => (before, parse_line_column(place)),
        None => (said, None),
    };
    if let Some(found) = said.split("found: ").nth(1) {
        if found.trim() == "EOF" {
            let end = u32::try_from(sql.chars().count() + 1).unwrap_or(u32::MAX);
            return Error::syntax("syntax error at end of input").at(Cursor::Position(end));
        }
        let error = Error::syntax(format!("syntax error at or near \"{}\"", found.trim()));
        return match cursor {
            Some(cursor) => error.at(cursor),
            None => error.with_detail(said),
        };
    }
    let error = Error::syntax(format!("syntax error: {said}"));
    match cursor {
        Some(cursor) => error.at(cursor),
        None => error,
    }
}

/// `1, Column: 20` (the tail of sqlparser's ` at Line: 1, Column: 20`).
fn parse_line_column(place: &str) -> Option<Cursor> {
    let (line, column) = place.split_once(", Column: ")?;
    Some(Cursor::At { line: line.trim().parse().ok()?, column: column.trim().parse().ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(sql: &str) -> String {
        let statements = parse_statements(sql).unwrap();
        assert_eq!(statements.len(), 1);
        statements[0].to_string()
    }

    #[test]
    fn symmetric_between_becomes_both_orders() {
        assert_eq!(one("SELECT a BETWEEN SYMMETRIC 5 AND 1"), "SELECT ((a BETWEEN 5 AND 1) OR (a BETWEEN 1 AND 5))");
        assert_eq!(
            one("SELECT a NOT BETWEEN symmetric -x AND (1)"),
            "SELECT ((a NOT BETWEEN -x AND (1)) AND (a NOT BETWEEN (1) AND -x))"
        );
        assert_eq!(one("SELECT a BETWEEN ASYMMETRIC 1 AND 5"), "SELECT a BETWEEN 1 AND 5");
    }

    #[test]
    fn nested_and_mixed_betweens_keep_their_own_form() {
        assert_eq!(
            one("SELECT a BETWEEN (b BETWEEN SYMMETRIC 2 AND 1) AND c, d BETWEEN SYMMETRIC (e BETWEEN 1 AND 2) AND f"),
            "SELECT a BETWEEN (((b BETWEEN 2 AND 1) OR (b BETWEEN 1 AND 2))) AND c, \
             ((d BETWEEN (e BETWEEN 1 AND 2) AND f) OR (d BETWEEN f AND (e BETWEEN 1 AND 2)))"
        );
        assert_eq!(
            one("SELECT (x BETWEEN SYMMETRIC 1 AND 2) BETWEEN SYMMETRIC y AND z"),
            "SELECT (((((x BETWEEN 1 AND 2) OR (x BETWEEN 2 AND 1))) BETWEEN y AND z) OR \
             ((((x BETWEEN 1 AND 2) OR (x BETWEEN 2 AND 1))) BETWEEN z AND y))"
        );
    }

    #[test]
    fn the_word_elsewhere_is_left_alone() {
        assert_eq!(one("SELECT \"symmetric\" FROM t WHERE a BETWEEN \"symmetric\" AND 2"), "SELECT \"symmetric\" FROM t WHERE a BETWEEN \"symmetric\" AND 2");
        assert_eq!(one("SELECT 'symmetric' LIKE 'a'"), "SELECT 'symmetric' LIKE 'a'");
    }

    #[test]
    fn grouping_set_elements_may_be_expressions_starting_with_a_parenthesis() {
        assert_eq!(
            one("SELECT 1 FROM t GROUP BY CUBE ((a)::text, (b), (c, d)), ROLLUP ((a) + 1), GROUPING SETS ((a)::int, ())"),
            "SELECT 1 FROM t GROUP BY CUBE ((a)::TEXT, b, (c, d)), ROLLUP ((a) + 1), GROUPING SETS (((a)::INT), ())"
        );
        assert_eq!(one("SELECT rollup FROM cube GROUP BY (a)::text"), "SELECT rollup FROM cube GROUP BY (a)::TEXT");
    }

    #[test]
    fn syntax_errors_point_where_they_did() {
        let plain = parse_statements("SELECT a BETWEEN 1 2").unwrap_err();
        let symmetric = parse_statements("SELECT a BETWEEN SYMMETRIC 1 2").unwrap_err();
        assert_eq!(plain.message, "syntax error at or near \"2\"");
        assert_eq!(symmetric.message, plain.message);
        assert_eq!(plain.cursor, Some(Cursor::At { line: 1, column: 20 }));
        assert_eq!(symmetric.cursor, Some(Cursor::At { line: 1, column: 30 }));
        assert_eq!(parse_statements("SELECT 1 +").unwrap_err().cursor, Some(Cursor::Position(11)));
    }
}
