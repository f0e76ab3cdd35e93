//! `VACUUM`: PostgreSQL's statement, in both of its forms —
//! `VACUUM [ ( option [, ...] ) ] [ table [ (column [, ...]) ] [, ...] ]` and the older
//! `VACUUM [ FULL ] [ FREEZE ] [ VERBOSE ] [ ANALYZE ] [ table [ (column, ...) ] [, ...] ]`.
//! sqlparser reads only Redshift's VACUUM, so the text is tokenized and read here.
//!
//! **What it does.** DELETE and UPDATE leave the old row versions in place (their xmax
//! stamped), and a failed or rolled-back INSERT leaves rows no one will ever see. VACUUM
//! counts, per table, the tuples the latest snapshot sees and the others; when there is
//! any of the others (or with `FULL`), the table is rewritten: its live tuples copied in
//! physical order into a new relation (`heap::LiveTupleCopier`), every index rebuilt on
//! it, the old files dropped when the statement commits — PostgreSQL's `VACUUM FULL`.
//! weft has no write-ahead log, so pruning pages in place could tear a page holding live
//! rows in a crash; a new relation that becomes the table's only when the catalog is
//! published cannot. Readers that started earlier keep reading the old relation. A table
//! without dead tuples is left as it is (its row count is refreshed).
//!
//! After a rewrite the table has no dead rows, so index-only scans are possible again
//! and unique checks stop visiting the heap for entries of the build (see weft-access's
//! README, "B-tree"). `ANALYZE` then gathers statistics as the ANALYZE statement does.
//! `FREEZE`, `DISABLE_PAGE_SKIPPING`, `SKIP_LOCKED`, `INDEX_CLEANUP`, `PROCESS_TOAST`,
//! `TRUNCATE` and `PARALLEL` are checked as PostgreSQL checks them and change nothing:
//! a rewrite leaves nothing to freeze, skip, clean or truncate.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use weft_access::heap::{census_blocks, LiveTupleCopier, TupleCensus};
use weft_common::parallel::CancelToken;
use weft_common::{Error, Result, SqlState};
use weft_storage::{BlockNumber, BufferAccessStrategy, ForkNumber};

use crate::api::QueryResult;
use crate::session::Session;

/// Blocks read per call while counting or copying (cancellation checks in between).
const CHUNK_BLOCKS: BlockNumber = 1024;

/// Is `sql` a VACUUM statement (which sqlparser reads in Redshift's form only)?
pub fn is_vacuum(sql: &str) -> bool {
    let word: String = sql.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    word.eq_ignore_ascii_case("vacuum")
}

/// Run `sql`, a VACUUM statement.
pub fn vacuum(session: &mut Session, sql: &str, cancel: &CancelToken) -> Result<QueryResult> {
    let request = parse(sql)?;
    if session.in_transaction_block() {
        return Err(Error::new(SqlState::ACTIVE_SQL_TRANSACTION, "VACUUM cannot run inside a transaction block"));
    }
    run(session, &request, cancel)
}

/// A parsed VACUUM.
#[derive(Debug, Default, PartialEq)]
struct VacuumRequest {
    full: bool,
    verbose: bool,
    analyze: bool,
    /// Tables (with the columns to analyze); empty: every table.
    targets: Vec<(String, Vec<String>)>,
}

fn parse(sql: &str) -> Result<VacuumRequest> {
    let mut reader = Reader::new(sql)?;
    reader.keyword("vacuum")?;
    let mut request = VacuumRequest::default();
    let mut parallel_workers = 0;
    let mut disable_page_skipping = false;
    let listed = reader.options(|name, value| {
        match name {
            "full" => request.full = boolean(name, value)?,
            "verbose" => request.verbose = boolean(name, value)?,
            "analyze" | "analyse" => request.analyze = boolean(name, value)?,
            "disable_page_skipping" => disable_page_skipping = boolean(name, value)?,
            "freeze" | "skip_locked" | "process_toast" | "truncate" => {
                boolean(name, value)?;
            }
            "index_cleanup" => {
                if !value.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("auto")) {
                    boolean(name, value)?;
                }
            }
            "parallel" => parallel_workers = parallel(value)?,
            _ => return Err(Error::syntax(format!("unrecognized VACUUM option \"{name}\""))),
        }
        Ok(())
    })?;
    if !listed {
        // The older form: each word at most once, in this order.
        for word in ["full", "freeze", "verbose", "analyze"] {
            let here = matches!(reader.peek(), Some(Token::Word(w)) if w.quote_style.is_none()
                && (w.value.eq_ignore_ascii_case(word) || (word == "analyze" && w.value.eq_ignore_ascii_case("analyse"))));
            if here {
                reader.at += 1;
                match word {
                    "full" => request.full = true,
                    "verbose" => request.verbose = true,
                    "analyze" => request.analyze = true,
                    _ => {}
                }
            }
        }
    }
    request.targets = read_targets(&mut reader)?;
    if request.full && parallel_workers > 0 {
        return Err(Error::not_supported("VACUUM FULL cannot be performed in parallel"));
    }
    if request.full && disable_page_skipping {
        return Err(Error::not_supported("VACUUM option DISABLE_PAGE_SKIPPING cannot be used with FULL"));
    }
    if !request.analyze && request.targets.iter().any(|(_, columns)| !columns.is_empty()) {
        return Err(Error::not_supported("ANALYZE option must be specified when a column list is provided"));
    }
    Ok(request)
}

/// The rest of a VACUUM or ANALYZE: tables, each with an optional column list.
pub(crate) fn read_targets(reader: &mut Reader) -> Result<Vec<(String, Vec<String>)>> {
    let mut targets = Vec::new();
    while !reader.at_end() {
        if !targets.is_empty() {
            match reader.next() {
                Some(Token::Comma) => {}
                other => return Err(reader.unexpected(other)),
            }
        }
        let table = reader.table_name()?;
        let mut columns = Vec::new();
        if reader.peek() == Some(&Token::LParen) {
            reader.at += 1;
            loop {
                columns.push(reader.identifier()?);
                match reader.next() {
                    Some(Token::Comma) => continue,
                    Some(Token::RParen) => break,
                    other => return Err(reader.unexpected(other)),
                }
            }
        }
        targets.push((table, columns));
    }
    Ok(targets)
}

/// An option's Boolean value (none: true), read as PostgreSQL's `defGetBoolean` reads it.
pub(crate) fn boolean(name: &str, value: &Option<String>) -> Result<bool> {
    let Some(value) = value else { return Ok(true) };
    match value.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(Error::syntax(format!("{name} requires a Boolean value"))),
    }
}

fn parallel(value: &Option<String>) -> Result<i64> {
    let Some(value) = value else {
        return Err(Error::syntax("parallel option requires a value between 0 and 1024"));
    };
    match value.parse::<i64>() {
        Ok(n) if (0..=1024).contains(&n) => Ok(n),
        Ok(_) => Err(Error::syntax("parallel workers for vacuum must be between 0 and 1024")),
        Err(_) => Err(Error::syntax("parallel requires an integer value")),
    }
}

/// Reads the token stream of one VACUUM (or CLUSTER) statement.
pub(crate) struct Reader {
    tokens: Vec<Token>,
    pub(crate) at: usize,
}

impl Reader {
    pub(crate) fn new(sql: &str) -> Result<Reader> {
        let dialect = PostgreSqlDialect {};
        let tokens = Tokenizer::new(&dialect, sql).tokenize().map_err(|e| Error::syntax(e.to_string()))?;
        let tokens: Vec<Token> = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
        Ok(Reader { tokens, at: 0 })
    }

    /// A parenthesized option list, if one comes next: `each` gets every option's
    /// lowercased name and its value. Returns whether there was one.
    pub(crate) fn options(&mut self, mut each: impl FnMut(&str, &Option<String>) -> Result<()>) -> Result<bool> {
        if self.peek() != Some(&Token::LParen) {
            return Ok(false);
        }
        self.at += 1;
        loop {
            let name = self.word()?.to_lowercase();
            let value = self.option_value();
            each(&name, &value)?;
            match self.next() {
                Some(Token::Comma) => continue,
                Some(Token::RParen) => return Ok(true),
                other => return Err(self.unexpected(other)),
            }
        }
    }

    /// The unquoted word `word` next (the older syntax's `VERBOSE`): taken if so.
    pub(crate) fn take_word(&mut self, word: &str) -> bool {
        let here = matches!(self.peek(), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
        if here {
            self.at += 1;
        }
        here
    }

    pub(crate) fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    pub(crate) fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    /// At the end of the statement (a trailing `;` included).
    pub(crate) fn at_end(&self) -> bool {
        self.tokens[self.at.min(self.tokens.len())..].iter().all(|t| matches!(t, Token::SemiColon | Token::EOF))
    }

    pub(crate) fn unexpected(&self, token: Option<Token>) -> Error {
        match token {
            None | Some(Token::EOF) | Some(Token::SemiColon) => Error::syntax("syntax error at end of input"),
            Some(token) => Error::syntax(format!("syntax error at or near \"{token}\"")),
        }
    }

    pub(crate) fn keyword(&mut self, keyword: &str) -> Result<()> {
        match self.next() {
            Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword) => Ok(()),
            other => Err(self.unexpected(other)),
        }
    }

    /// An unquoted word (an option name).
    pub(crate) fn word(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.value),
            other => Err(self.unexpected(other)),
        }
    }

    /// An option's value, if one follows its name: a word, a number or a string.
    pub(crate) fn option_value(&mut self) -> Option<String> {
        let value = match self.peek()? {
            Token::Word(w) => w.value.clone(),
            Token::Number(n, _) => n.clone(),
            Token::SingleQuotedString(s) => s.clone(),
            Token::Minus => match self.tokens.get(self.at + 1) {
                Some(Token::Number(n, _)) => {
                    self.at += 1;
                    format!("-{n}")
                }
                _ => return None,
            },
            _ => return None,
        };
        self.at += 1;
        Some(value)
    }

    /// An identifier: folded to lower case unless quoted.
    pub(crate) fn identifier(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) if w.quote_style.is_some() => Ok(w.value),
            Some(Token::Word(w)) => Ok(w.value.to_lowercase()),
            other => Err(self.unexpected(other)),
        }
    }

    /// A table name, perhaps qualified by the schema `public`. VACUUM's option words are
    /// reserved in PostgreSQL's grammar: unquoted, they cannot name a table.
    pub(crate) fn table_name(&mut self) -> Result<String> {
        if let Some(Token::Word(w)) = self.peek() {
            let reserved = ["full", "freeze", "verbose", "analyze", "analyse"].iter().any(|k| w.value.eq_ignore_ascii_case(k));
            if reserved && w.quote_style.is_none() {
                let token = self.next();
                return Err(self.unexpected(token));
            }
        }
        let first = self.identifier()?;
        if self.peek() != Some(&Token::Period) {
            return Ok(first);
        }
        self.at += 1;
        let name = self.identifier()?;
        if first != "public" {
            return Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("schema \"{first}\" does not exist")));
        }
        Ok(name)
    }
}

fn run(session: &mut Session, request: &VacuumRequest, cancel: &CancelToken) -> Result<QueryResult> {
    let db = session.db.clone();
    let mut notices = Vec::new();
    let mut last_build = None;
    session.write(|txn| {
        let names: Vec<String> = if request.targets.is_empty() {
            txn.catalog.tables.keys().cloned().collect()
        } else {
            let mut names = Vec::new();
            for (name, columns) in &request.targets {
                if !txn.catalog.tables.contains_key(name) {
                    if txn.catalog.indexes.contains_key(name) {
                        notices.push(format!("WARNING:  skipping \"{name}\" --- cannot vacuum non-tables or special system tables"));
                        continue;
                    }
                    return Err(weft_access::catalog::undefined_table(name));
                }
                crate::analyze::check_columns(&txn.catalog, name, columns)?;
                names.push(name.clone());
            }
            names
        };
        let snapshot = txn.catalog.snapshot();
        for name in &names {
            let table = txn.catalog.table(name)?.clone();
            if request.verbose {
                notices.push(format!("INFO:  vacuuming \"public.{name}\""));
            }
            let old = table.locator();
            let pages = db.pool.nblocks(old, ForkNumber::Main)?;
            let mut ring = (pages as usize > db.pool.nbuffers() / 4).then(BufferAccessStrategy::bulk_read);
            let mut census = TupleCensus::default();
            if !request.full {
                for start in (0..pages).step_by(CHUNK_BLOCKS as usize) {
                    cancel.check()?;
                    let part = census_blocks(&db.pool, old, start..(start + CHUNK_BLOCKS).min(pages), ring.as_mut(), &snapshot)?;
                    census.live += part.live;
                    census.dead += part.dead;
                }
            }
            if request.full || census.dead > 0 {
                let new = txn.create_relation(&db)?;
                let mut copier = LiveTupleCopier::new(&db.pool, old, new, snapshot.clone());
                for start in (0..pages).step_by(CHUNK_BLOCKS as usize) {
                    cancel.check()?;
                    copier.copy_blocks(start..(start + CHUNK_BLOCKS).min(pages), ring.as_mut())?;
                }
                census = copier.finish()?;
                let meta = txn.catalog.table_mut(name)?;
                meta.rel_number = new.rel_number;
                txn.drop_relation(old);
                if let Some(report) = crate::indexes::rebuild_indexes_of(session, txn, name, "VACUUM", cancel, &mut notices)? {
                    last_build = Some(report);
                }
            }
            let meta = txn.catalog.table_mut(name)?;
            meta.row_count = census.live;
            meta.has_dead_rows = false;
            if request.verbose {
                notices.push(format!(
                    "INFO:  \"public.{name}\": found {} removable, {} nonremovable row versions in {pages} pages",
                    census.dead, census.live
                ));
            }
        }
        if request.analyze {
            if request.verbose {
                notices.extend(names.iter().map(|name| format!("INFO:  analyzing \"public.{name}\"")));
            }
            crate::analyze::analyze_tables(&db, txn, &names, cancel)?;
        }
        Ok(())
    })?;
    session.note_index_build(last_build);
    Ok(QueryResult::command_with_notices("VACUUM", notices))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(request: &VacuumRequest) -> Vec<(&str, Vec<&str>)> {
        request.targets.iter().map(|(t, c)| (t.as_str(), c.iter().map(String::as_str).collect())).collect()
    }

    #[test]
    fn both_forms_parse() {
        let r = parse("VACUUM").unwrap();
        assert_eq!(r, VacuumRequest::default());
        let r = parse("vacuum full freeze verbose analyze t (a, \"B\"), public.u;").unwrap();
        assert!(r.full && r.verbose && r.analyze);
        assert_eq!(targets(&r), vec![("t", vec!["a", "B"]), ("u", vec![])]);
        let r = parse("VACUUM (FULL false, VERBOSE, analyze on, index_cleanup auto, parallel 0, truncate 0) \"T\"").unwrap();
        assert!(!r.full && r.verbose && r.analyze);
        assert_eq!(targets(&r), vec![("T", vec![])]);
        let r = parse("VACUUM ANALYSE t").unwrap();
        assert!(r.analyze && !r.full);
    }

    #[test]
    fn errors_are_postgresqls() {
        let code = |sql: &str| parse(sql).unwrap_err().sqlstate.clone();
        let message = |sql: &str| parse(sql).unwrap_err().message.clone();
        assert_eq!(message("VACUUM (foo) t"), "unrecognized VACUUM option \"foo\"");
        assert_eq!(code("VACUUM (foo) t"), SqlState::SYNTAX_ERROR);
        assert_eq!(message("VACUUM (full, parallel 2) t"), "VACUUM FULL cannot be performed in parallel");
        assert_eq!(code("VACUUM (full, parallel 2) t"), SqlState::FEATURE_NOT_SUPPORTED);
        assert_eq!(message("VACUUM (index_cleanup maybe) t"), "index_cleanup requires a Boolean value");
        assert_eq!(message("VACUUM (parallel -1) t"), "parallel workers for vacuum must be between 0 and 1024");
        assert_eq!(message("VACUUM t (a)"), "ANALYZE option must be specified when a column list is provided");
        assert_eq!(message("VACUUM analyze full t"), "syntax error at or near \"full\"");
        assert_eq!(message("VACUUM t u"), "syntax error at or near \"u\"");
        assert_eq!(message("VACUUM (verbose"), "syntax error at end of input");
    }
}
