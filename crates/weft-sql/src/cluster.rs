//! `CLUSTER`: rewrite a table in the order of one of its B-tree indexes —
//! `CLUSTER [VERBOSE] [ ( VERBOSE [boolean] ) ] [ table [ USING index ] ]` and the older
//! `CLUSTER [VERBOSE] index ON table`, and `ALTER TABLE ... CLUSTER ON index | SET WITHOUT
//! CLUSTER`. sqlparser reads none of them, so the text is read here with VACUUM's reader.
//!
//! The live tuples are copied into a new relation in the index's order, each keeping its
//! xmin, as VACUUM FULL copies them in physical order (`heap::LiveTupleCopier`); every
//! index is rebuilt on the new relation and the old one dropped when the statement
//! commits, so readers that started earlier go on reading the old relation. The index
//! is remembered (`IndexMeta::clustered`, `pg_index.indisclustered`) for a later
//! `CLUSTER table` or a bare `CLUSTER`, which reclusters every table that has one.
//! A partial index cannot order the rows it leaves out, so it is refused, as in
//! PostgreSQL.

use std::ops::Bound;

use sqlparser::tokenizer::Token;
use weft_access::btree::{BTree, ScanDirection};
use weft_access::heap::LiveTupleCopier;
use weft_access::index_build::btree_desc;
use weft_common::parallel::CancelToken;
use weft_common::{Error, Result, SqlState};
use weft_storage::ForkNumber;

use crate::api::QueryResult;
use crate::session::Session;
use crate::vacuum::{boolean, Reader};

/// Index entries read between cancellation checks.
const CANCEL_CHECK_ENTRIES: u64 = 4096;

/// Is `sql` a CLUSTER statement?
pub fn is_cluster(sql: &str) -> bool {
    let word: String = sql.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    word.eq_ignore_ascii_case("cluster")
}

/// A parsed CLUSTER.
#[derive(Debug, Default, PartialEq)]
struct ClusterRequest {
    verbose: bool,
    /// The table; `None`: every table that has a clustered index.
    table: Option<String>,
    /// The index to order by; `None`: the table's clustered index.
    index: Option<String>,
}

fn parse(sql: &str) -> Result<ClusterRequest> {
    let mut reader = Reader::new(sql)?;
    reader.keyword("cluster")?;
    let mut request = ClusterRequest::default();
    let listed = reader.options(|name, value| match name {
        "verbose" => {
            request.verbose = boolean(name, value)?;
            Ok(())
        }
        _ => Err(Error::syntax(format!("unrecognized CLUSTER option \"{name}\""))),
    })?;
    if !listed && reader.take_word("verbose") {
        request.verbose = true;
    }
    if reader.at_end() {
        return Ok(request);
    }
    let first = reader.table_name()?;
    match reader.peek() {
        Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("using") => {
            reader.at += 1;
            request.table = Some(first);
            request.index = Some(reader.identifier()?);
        }
        Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("on") => {
            reader.at += 1;
            request.index = Some(first);
            request.table = Some(reader.table_name()?);
        }
        _ => request.table = Some(first),
    }
    if !reader.at_end() {
        let token = reader.next();
        return Err(reader.unexpected(token));
    }
    Ok(request)
}

/// Might `sql` be `ALTER TABLE ... CLUSTER ON index` or `... SET WITHOUT CLUSTER`, which
/// sqlparser does not read? (A cheap test; [`alter_table_cluster`] reads it.)
pub fn may_be_alter_table_cluster(sql: &str) -> bool {
    let mut words = sql.split_whitespace();
    words.next().is_some_and(|w| w.eq_ignore_ascii_case("alter")) && words.any(|w| w.trim_end_matches(';').eq_ignore_ascii_case("cluster"))
}

/// `ALTER TABLE [IF EXISTS] [ONLY] table CLUSTER ON index` / `SET WITHOUT CLUSTER`: mark
/// the index CLUSTER uses, or none. `None` when `sql` is not one of them.
pub fn alter_table_cluster(session: &mut Session, sql: &str) -> Option<Result<QueryResult>> {
    let mut reader = Reader::new(sql).ok()?;
    let word = |reader: &mut Reader, word: &str| {
        let here = matches!(reader.peek(), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
        if here {
            reader.at += 1;
        }
        here
    };
    if !word(&mut reader, "alter") || !word(&mut reader, "table") {
        return None;
    }
    let if_exists = word(&mut reader, "if") && word(&mut reader, "exists");
    word(&mut reader, "only");
    let table = reader.table_name().ok()?;
    let index = if word(&mut reader, "cluster") && word(&mut reader, "on") {
        Some(reader.identifier().ok()?)
    } else if word(&mut reader, "set") && word(&mut reader, "without") && word(&mut reader, "cluster") {
        None
    } else {
        return None;
    };
    if !reader.at_end() {
        return None;
    }
    let mut notices = Vec::new();
    let outcome = session.write(|txn| {
        if !txn.catalog.tables.contains_key(&table) {
            if if_exists {
                notices.push(format!("NOTICE:  relation \"{table}\" does not exist, skipping"));
                return Ok(());
            }
            return Err(weft_access::catalog::undefined_table(&table));
        }
        if let Some(name) = &index {
            let found = txn.catalog.indexes.get(name).filter(|i| i.table == table).ok_or_else(|| {
                Error::new(SqlState::UNDEFINED_OBJECT, format!("index \"{name}\" for table \"{table}\" does not exist"))
            })?;
            if found.predicate.is_some() {
                return Err(Error::not_supported(format!("cannot cluster on partial index \"{name}\"")));
            }
        }
        for other in txn.catalog.indexes.values_mut().filter(|i| i.table == table) {
            other.clustered = index.as_ref() == Some(&other.name);
        }
        Ok(())
    });
    Some(outcome.map(|()| QueryResult::command_with_notices("ALTER TABLE", notices)))
}

/// Run `sql`, a CLUSTER statement.
pub fn cluster(session: &mut Session, sql: &str, cancel: &CancelToken) -> Result<QueryResult> {
    let request = parse(sql)?;
    if request.table.is_none() && session.in_transaction_block() {
        return Err(Error::new(SqlState::ACTIVE_SQL_TRANSACTION, "CLUSTER cannot run inside a transaction block"));
    }
    let db = session.db.clone();
    let mut notices = Vec::new();
    let mut last_build = None;
    session.write(|txn| {
        // (table, index) pairs to rewrite.
        let targets: Vec<(String, String)> = match (&request.table, &request.index) {
            (None, _) => txn.catalog.indexes.values().filter(|i| i.clustered).map(|i| (i.table.clone(), i.name.clone())).collect(),
            (Some(table), index) => {
                txn.catalog.table(table)?;
                let index = match index {
                    Some(name) => {
                        let index = txn.catalog.indexes.get(name).ok_or_else(|| {
                            Error::new(SqlState::UNDEFINED_OBJECT, format!("index \"{name}\" for table \"{table}\" does not exist"))
                        })?;
                        if index.table != *table {
                            return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not an index for table \"{table}\"")));
                        }
                        name.clone()
                    }
                    None => txn.catalog.indexes_of(table).find(|i| i.clustered).map(|i| i.name.clone()).ok_or_else(|| {
                        Error::new(SqlState::UNDEFINED_OBJECT, format!("there is no previously clustered index for table \"{table}\""))
                    })?,
                };
                vec![(table.clone(), index)]
            }
        };
        for (table_name, index_name) in targets {
            let table = txn.catalog.table(&table_name)?.clone();
            let index = txn.catalog.indexes.get(&index_name).cloned().ok_or_else(|| Error::internal("a clustered index vanished"))?;
            if index.predicate.is_some() {
                return Err(Error::not_supported(format!("cannot cluster on partial index \"{index_name}\"")));
            }
            for other in txn.catalog.indexes.values_mut().filter(|i| i.table == table_name) {
                other.clustered = other.name == index_name;
            }
            if request.verbose {
                notices.push(format!("INFO:  clustering \"public.{table_name}\" using index scan on \"{index_name}\""));
            }
            let old = table.locator();
            let new = txn.create_relation(&db)?;
            let snapshot = txn.catalog.snapshot();
            let mut copier = LiveTupleCopier::new(&db.pool, old, new, snapshot);
            let desc = btree_desc(&table, &index)?;
            let tree = BTree::open(&db.pool, index.locator(), &desc);
            let mut scan = tree.scan(Bound::Unbounded, Bound::Unbounded, ScanDirection::Forward)?;
            let mut entries = 0u64;
            while let Some(entry) = scan.next()? {
                entries += 1;
                if entries % CANCEL_CHECK_ENTRIES == 0 {
                    cancel.check()?;
                }
                copier.copy_tid(desc.tid_word(entry).tid())?;
            }
            let census = copier.finish()?;
            let pages = db.pool.nblocks(old, ForkNumber::Main)?;
            let meta = txn.catalog.table_mut(&table_name)?;
            meta.rel_number = new.rel_number;
            meta.row_count = census.live;
            meta.has_dead_rows = false;
            txn.drop_relation(old);
            if let Some(report) = crate::indexes::rebuild_indexes_of(session, txn, &table_name, "CLUSTER", cancel, &mut notices)? {
                last_build = Some(report);
            }
            if request.verbose {
                notices.push(format!(
                    "INFO:  \"public.{table_name}\": found {} removable, {} nonremovable row versions in {pages} pages",
                    census.dead, census.live
                ));
            }
        }
        Ok(())
    })?;
    session.note_index_build(last_build);
    Ok(QueryResult::command_with_notices("CLUSTER", notices))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_form() {
        let r = parse("CLUSTER").unwrap();
        assert_eq!(r, ClusterRequest::default());
        let r = parse("cluster verbose public.t USING \"I\";").unwrap();
        assert_eq!(r, ClusterRequest { verbose: true, table: Some("t".into()), index: Some("I".into()) });
        let r = parse("CLUSTER (verbose off) T").unwrap();
        assert_eq!(r, ClusterRequest { verbose: false, table: Some("t".into()), index: None });
        let r = parse("CLUSTER i ON t").unwrap();
        assert_eq!(r, ClusterRequest { verbose: false, table: Some("t".into()), index: Some("i".into()) });
        assert_eq!(parse("CLUSTER t USING").unwrap_err().message, "syntax error at end of input");
        assert_eq!(parse("CLUSTER t x").unwrap_err().message, "syntax error at or near \"x\"");
        assert_eq!(parse("CLUSTER (fast) t").unwrap_err().message, "unrecognized CLUSTER option \"fast\"");
    }
}
