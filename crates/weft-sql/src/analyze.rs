//! `ANALYZE [t [(columns)]]`: planner statistics from a sample of each table, as
//! PostgreSQL's `analyze.c` computes them with `default_statistics_target = 100`.
//!
//! **Sample.** Up to [`SAMPLE_ROWS`] (300 × the target) rows. A table of at most that
//! many blocks is read whole; a bigger one has that many blocks chosen uniformly (Knuth's
//! selection sampling, PostgreSQL's `BlockSampler`), read in block order. Rows are kept in
//! a reservoir (Vitter's algorithm R) and then put back in physical order, so the
//! correlation below sees the table's order. The random numbers come from a generator
//! seeded by the table's oid and row count: the same table gives the same statistics,
//! hence the same plans.
//!
//! **Per column** (`compute_scalar_stats`): the NULL fraction and average width; the
//! number of distinct values, which when the sample is not the whole table is the
//! Haas–Stokes `Duj1` estimate `n d / (n − f1 + f1 n / N)` (stored as minus a fraction of
//! the rows when above a tenth of them, so it scales with the table); the most common
//! values — every value when all of them repeat and fit in the list, else those that
//! `analyze_mcv_list` finds significantly more common than the rest; an equi-depth
//! histogram of up to 101 bounds over the other values; and the correlation between
//! physical order and value order. Values wider than 1024 bytes count toward the NULL
//! fraction's complement and the distinct estimate only (`WIDTH_THRESHOLD`).
//!
//! **Per index**: the fraction of entries added after the build (whose heap row an
//! index-only scan must visit), from up to [`INDEX_SAMPLE_ENTRIES`] entries read in
//! short runs starting at sampled key values — the index-only scan's `allvisfrac`.
//!
//! A table read whole also has its live row count recounted. The statistics go to
//! `Catalog::statistics` under the table's oid, published like any catalog change; the
//! statistics of tables that no longer exist are dropped at the same time.

use std::cmp::Ordering;
use std::ops::Bound;

use sqlparser::ast;
use weft_access::btree::{BTree, ScanDirection};
use weft_access::catalog::{IndexMeta, TableMeta};
use weft_access::heap::{has_zone_value, page_zone, scan_pages_and_tids, Tid};
use weft_access::index_build::btree_desc;
use weft_access::stats::{ColumnStats, IndexStats, StatValue, TableStats};
use weft_access::{Catalog, Snapshot};
use weft_common::parallel::CancelToken;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::compare_datums;
use weft_storage::zone_map::{BlockZone, ZoneMapBuild};
use weft_storage::{BlockNumber, BufferAccessStrategy, BufferPool, ForkNumber, RelFileLocator};

use crate::api::QueryResult;
use crate::bind::{ident_name, object_name};
use crate::database::{Database, WriteTxn};
use crate::session::Session;
use crate::vacuum::{read_targets, Reader};

/// PostgreSQL's `default_statistics_target`: MCV list length and histogram buckets.
pub const STATISTICS_TARGET: usize = 100;
/// Rows (and blocks) sampled: 300 × the target, as PostgreSQL's `std_typanalyze`.
pub const SAMPLE_ROWS: usize = 300 * STATISTICS_TARGET;
/// Values wider than this are left out of MCV lists and histograms (`WIDTH_THRESHOLD`).
const WIDTH_THRESHOLD: usize = 1024;
/// Index entries sampled to estimate the fraction that needs a heap visit.
pub const INDEX_SAMPLE_ENTRIES: usize = 16_384;
/// Entries read from each starting point of the index sample.
const INDEX_SAMPLE_RUN: usize = 256;
/// Blocks read per call while sampling (cancellation checks in between).
const READ_CHUNK_BLOCKS: u32 = 1024;

/// The `ANALYZE` statement.
pub(crate) fn analyze(session: &mut Session, statement: &ast::Analyze, cancel: &CancelToken) -> Result<QueryResult> {
    let db = session.db.clone();
    session.write(|txn| {
        let names: Vec<String> = match &statement.table_name {
            Some(name) => {
                let name = object_name(name)?;
                let columns: Vec<String> = statement.columns.iter().map(ident_name).collect();
                check_columns(&txn.catalog, &name, &columns)?;
                vec![name]
            }
            None => txn.catalog.tables.keys().cloned().collect(),
        };
        analyze_tables(&db, txn, &names, cancel)
    })?;
    Ok(QueryResult::command("ANALYZE"))
}

/// Is `sql` an ANALYZE of several tables (`ANALYZE a, b (x)`), which sqlparser cannot
/// read? (One table or none goes through sqlparser's `Statement::Analyze`.)
pub(crate) fn is_multi_table_analyze(sql: &str) -> bool {
    let word: String = sql.trim_start().chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    (word.eq_ignore_ascii_case("analyze") || word.eq_ignore_ascii_case("analyse")) && sql.contains(',')
}

/// `ANALYZE [ ( option [, ...] ) ] [ VERBOSE ] [ table [ (column [, ...]) ] [, ...] ]`,
/// read with VACUUM's reader.
pub(crate) fn try_analyze_text(session: &mut Session, sql: &str, cancel: &CancelToken) -> Option<Result<QueryResult>> {
    let targets = match parse_analyze(sql) {
        Ok(targets) => targets,
        Err(e) => return Some(Err(e)),
    };
    let db = session.db.clone();
    let outcome = session.write(|txn| {
        let mut names = Vec::with_capacity(targets.len());
        for (name, columns) in &targets {
            check_columns(&txn.catalog, name, columns)?;
            names.push(name.clone());
        }
        if names.is_empty() {
            names = txn.catalog.tables.keys().cloned().collect();
        }
        analyze_tables(&db, txn, &names, cancel)
    });
    Some(outcome.map(|()| QueryResult::command("ANALYZE")))
}

fn parse_analyze(sql: &str) -> Result<Vec<(String, Vec<String>)>> {
    let mut reader = Reader::new(sql)?;
    // `is_multi_table_analyze` saw the word.
    reader.word()?;
    let listed = reader.options(|name, value| match name {
        "verbose" | "skip_locked" => crate::vacuum::boolean(name, value).map(|_| ()),
        _ => Err(Error::syntax(format!("unrecognized ANALYZE option \"{name}\""))),
    })?;
    if !listed {
        reader.take_word("verbose");
    }
    read_targets(&mut reader)
}

/// Table `name` exists and has every column of `columns` (`ANALYZE t (columns)`).
pub(crate) fn check_columns(catalog: &Catalog, name: &str, columns: &[String]) -> Result<()> {
    let table = catalog.table(name)?;
    for column in columns {
        if table.column_index(column).is_none() {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{column}\" of relation \"{name}\" does not exist"),
            ));
        }
    }
    Ok(())
}

/// Gather the statistics of tables `names` into the transaction's catalog (and drop
/// those of tables that no longer exist).
pub(crate) fn analyze_tables(db: &Database, txn: &mut WriteTxn, names: &[String], cancel: &CancelToken) -> Result<()> {
    let snapshot = txn.catalog.snapshot();
    for name in names {
        let table = txn.catalog.table(name)?.clone();
        let indexes: Vec<IndexMeta> = txn.catalog.indexes_of(name).cloned().collect();
        let (stats, live) = gather(&db.pool, &table, &indexes, &snapshot, cancel)?;
        if let Some(live) = live {
            txn.catalog.table_mut(name)?.row_count = live;
        }
        txn.catalog.statistics.insert(table.oid, stats);
    }
    let live: std::collections::BTreeSet<u32> = txn.catalog.tables.values().map(|t| t.oid).collect();
    txn.catalog.statistics.retain(|oid, _| live.contains(oid));
    Ok(())
}

/// A deterministic generator (xorshift64*) for the samples.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, n).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// Blocks to read: all of them, or [`SAMPLE_ROWS`] chosen uniformly, in order, as runs.
fn sample_blocks(nblocks: BlockNumber, rng: &mut Rng) -> Vec<std::ops::Range<BlockNumber>> {
    if nblocks as usize <= SAMPLE_ROWS {
        return (0..nblocks).step_by(READ_CHUNK_BLOCKS as usize).map(|b| b..(b + READ_CHUNK_BLOCKS).min(nblocks)).collect();
    }
    // Knuth's Algorithm S: block b is taken with probability needed / remaining.
    let mut runs: Vec<std::ops::Range<BlockNumber>> = Vec::new();
    let mut needed = SAMPLE_ROWS as u64;
    for b in 0..nblocks {
        let remaining = (nblocks - b) as u64;
        if rng.below(remaining) < needed {
            needed -= 1;
            match runs.last_mut() {
                Some(run) if run.end == b && run.end - run.start < READ_CHUNK_BLOCKS => run.end = b + 1,
                _ => runs.push(b..b + 1),
            }
            if needed == 0 {
                break;
            }
        }
    }
    runs
}

/// Zone maps (`weft_storage::zone_map`) built by a whole-table read: ANALYZE reads every
/// block of a small table anyway, so it leaves the maps of its integer and text columns
/// that a hash join's probe or a bounded sort would otherwise build during its first scan
/// (reading every block once more, the query's whole cost where the map prunes).
#[derive(Default)]
struct ZoneBuilds {
    builds: Vec<(usize, ZoneMapBuild, Vec<(BlockNumber, BlockZone)>)>,
}

impl ZoneBuilds {
    /// Builds of the columns that can have a map and have none (none while a writer is
    /// active: see `ZoneMaps::begin_build`).
    fn start(pool: &BufferPool, rel: RelFileLocator, layout: &RowLayout, nblocks: BlockNumber) -> ZoneBuilds {
        let maps = pool.zone_maps();
        let builds = (0..layout.types().len())
            .filter(|&c| has_zone_value(layout, c))
            .filter(|&c| maps.get(rel, c).is_none())
            .filter_map(|c| maps.begin_build(rel, c, nblocks).map(|build| (c, build, Vec::with_capacity(nblocks as usize))))
            .collect();
        ZoneBuilds { builds }
    }

    fn add(&mut self, block: BlockNumber, page: &[u8], layout: &RowLayout) {
        for (column, _, ranges) in &mut self.builds {
            ranges.push((block, page_zone(page, layout, *column)));
        }
    }

    /// Publish every map (one the relation was written during is dropped by `publish`).
    fn publish(self, pool: &BufferPool) {
        for (_, build, ranges) in self.builds {
            build.add_all(&ranges);
            pool.zone_maps().publish(build);
        }
    }
}

/// The statistics of `table`, and its live row count when every block was read.
pub(crate) fn gather(
    pool: &BufferPool,
    table: &TableMeta,
    indexes: &[IndexMeta],
    snapshot: &Snapshot,
    cancel: &CancelToken,
) -> Result<(TableStats, Option<u64>)> {
    let rel = table.locator();
    let nblocks = pool.nblocks(rel, ForkNumber::Main)?;
    let mut rng = Rng::new(((table.oid as u64) << 32) ^ table.row_count);
    let whole = nblocks as usize <= SAMPLE_ROWS;
    let mut ring = (nblocks as usize > pool.nbuffers() / 4).then(BufferAccessStrategy::bulk_read);
    // Reservoir of (tid, tuple bytes).
    let mut reservoir: Vec<(Tid, Vec<u8>)> = Vec::with_capacity(SAMPLE_ROWS.min(table.row_count as usize + 1));
    let mut seen = 0u64;
    let layout = RowLayout::new(&table.column_types());
    let mut zones = if whole { ZoneBuilds::start(pool, rel, &layout, nblocks) } else { ZoneBuilds::default() };
    for run in sample_blocks(nblocks, &mut rng) {
        cancel.check()?;
        scan_pages_and_tids(pool, rel, run, ring.as_mut(), snapshot, |block, page| zones.add(block, page, &layout), |tid, tuple| {
            seen += 1;
            if reservoir.len() < SAMPLE_ROWS {
                reservoir.push((tid, tuple.to_vec()));
            } else {
                let k = rng.below(seen);
                if (k as usize) < SAMPLE_ROWS {
                    reservoir[k as usize] = (tid, tuple.to_vec());
                }
            }
            Ok(true)
        })?;
    }
    zones.publish(pool);
    reservoir.sort_by_key(|(tid, _)| (tid.block, tid.offset));
    // Rows in the table: counted when read whole, else the catalog's exact count.
    let total_rows = if whole { seen } else { table.row_count.max(seen) };
    let mut columns = Vec::with_capacity(table.columns.len());
    for (c, meta) in table.columns.iter().enumerate() {
        cancel.check()?;
        let mut values: Vec<Datum> = Vec::with_capacity(reservoir.len());
        for (_, tuple) in &reservoir {
            values.push(layout.get(tuple, c)?);
        }
        columns.push(column_stats(values, meta.data_type, total_rows as f64));
    }
    let mut stats = TableStats {
        rows: total_rows,
        sample_rows: reservoir.len() as u64,
        pages: nblocks,
        columns,
        indexes: Default::default(),
    };
    for index in indexes {
        cancel.check()?;
        if let Some(s) = index_stats(pool, table, index, &stats, &mut rng)? {
            stats.indexes.insert(index.name.clone(), s);
        }
    }
    Ok((stats, whole.then_some(seen)))
}

/// Average stored width of a non-null value (a text value's length word included, one
/// byte for short ones as PostgreSQL's short varlena header).
fn value_width(d: &Datum, data_type: DataType) -> usize {
    match (d, data_type.fixed_width()) {
        (_, Some(w)) => w,
        (Datum::Text(s), None) if s.len() < 127 => s.len() + 1,
        (Datum::Text(s), None) => s.len() + 4,
        _ => 0,
    }
}

/// PostgreSQL's `compute_scalar_stats` over one column of the sample (in physical
/// order), for a table of `total_rows` rows.
pub(crate) fn column_stats(sample: Vec<Datum>, data_type: DataType, total_rows: f64) -> ColumnStats {
    let sample_rows = sample.len();
    let mut null_cnt = 0usize;
    let mut too_wide = 0usize;
    let mut total_width = 0usize;
    // (value, position among the non-null values kept)
    let mut values: Vec<(Datum, usize)> = Vec::with_capacity(sample_rows);
    for d in sample {
        if d.is_null() {
            null_cnt += 1;
            continue;
        }
        let width = value_width(&d, data_type);
        total_width += width;
        if width > WIDTH_THRESHOLD {
            too_wide += 1;
            continue;
        }
        let position = values.len();
        values.push((d, position));
    }
    let nonnull = sample_rows - null_cnt;
    let mut stats = ColumnStats {
        null_frac: if sample_rows == 0 { 0.0 } else { null_cnt as f64 / sample_rows as f64 },
        avg_width: if nonnull == 0 { data_type.fixed_width().unwrap_or(0) as f64 } else { total_width as f64 / nonnull as f64 },
        n_distinct: 0.0,
        most_common_vals: Vec::new(),
        most_common_freqs: Vec::new(),
        histogram_bounds: Vec::new(),
        correlation: None,
    };
    if values.is_empty() {
        if nonnull == 0 && sample_rows > 0 {
            // All NULL: PostgreSQL records n_distinct 0 too.
            stats.null_frac = 1.0;
        } else if too_wide > 0 {
            // Only wide values: assume they are all distinct.
            stats.n_distinct = -(1.0 - stats.null_frac);
        }
        return stats;
    }
    // Stable on position: equal values stay in physical order.
    values.sort_by(|a, b| compare_datums(&a.0, &b.0).then(a.1.cmp(&b.1)));
    let n_values = values.len();

    // Runs of equal values: distinct count, values seen once, the repeated ones.
    let mut ndistinct = 0usize;
    let mut nmultiple = 0usize;
    // (count, index of the run's first value)
    let mut track: Vec<(usize, usize)> = Vec::new();
    let mut corr_xysum = 0f64;
    let mut run_start = 0usize;
    for i in 0..n_values {
        corr_xysum += i as f64 * values[i].1 as f64;
        let run_ends = i + 1 == n_values || compare_datums(&values[i].0, &values[i + 1].0) != Ordering::Equal;
        if run_ends {
            ndistinct += 1;
            let count = i + 1 - run_start;
            if count > 1 {
                nmultiple += 1;
                track.push((count, run_start));
            }
            run_start = i + 1;
        }
    }

    // Distinct values (Haas and Stokes' Duj1 when the sample is not the whole table).
    let null_frac = stats.null_frac;
    let n_distinct = if nmultiple == 0 {
        // Every value was unique in the sample: assume unique in the table.
        -(1.0 - null_frac)
    } else if too_wide == 0 && nmultiple == ndistinct {
        // Every value repeated: assume the sample saw them all.
        ndistinct as f64
    } else {
        let f1 = (ndistinct - nmultiple + too_wide) as f64;
        let d = f1 + nmultiple as f64;
        let n = (sample_rows - null_cnt) as f64;
        let big_n = total_rows * (1.0 - null_frac);
        let denom = if big_n > 0.0 { (n - f1) + f1 * n / big_n } else { n - f1 };
        let mut estimate = if denom > 0.0 { n * d / denom } else { d };
        if estimate < d {
            estimate = d;
        }
        if estimate > big_n {
            estimate = big_n;
        }
        (estimate + 0.5).floor()
    };
    stats.n_distinct = if total_rows > 0.0 && n_distinct > 0.1 * total_rows { -(n_distinct / total_rows) } else { n_distinct };

    // Most common values: the repeated ones, most frequent first.
    track.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut num_mcv = STATISTICS_TARGET;
    if track.len() == ndistinct && too_wide == 0 && stats.n_distinct > 0.0 && track.len() <= num_mcv {
        num_mcv = track.len();
    } else {
        num_mcv = num_mcv.min(track.len());
        let counts: Vec<usize> = track[..num_mcv].iter().map(|t| t.0).collect();
        num_mcv = analyze_mcv_list(&counts, stats.n_distinct, null_frac, sample_rows as f64, total_rows);
    }
    let mcv = &track[..num_mcv];
    for &(count, first) in mcv {
        stats.most_common_vals.push(StatValue(values[first].0.clone()));
        stats.most_common_freqs.push(count as f64 / sample_rows as f64);
    }

    // The histogram: the other values, equi-depth.
    let mut in_mcv = vec![false; n_values];
    for &(count, first) in mcv {
        in_mcv[first..first + count].iter_mut().for_each(|m| *m = true);
    }
    let rest: Vec<&Datum> = values.iter().zip(&in_mcv).filter(|(_, m)| !**m).map(|(v, _)| &v.0).collect();
    let num_hist = (ndistinct - num_mcv).min(STATISTICS_TARGET + 1);
    if num_hist >= 2 && rest.len() >= 2 {
        let nvals = rest.len();
        let delta = (nvals - 1) / (num_hist - 1);
        let delta_frac = (nvals - 1) % (num_hist - 1);
        let (mut pos, mut pos_frac) = (0usize, 0usize);
        for _ in 0..num_hist {
            stats.histogram_bounds.push(StatValue(rest[pos.min(nvals - 1)].clone()));
            pos += delta;
            pos_frac += delta_frac;
            if pos_frac >= num_hist - 1 {
                pos += 1;
                pos_frac -= num_hist - 1;
            }
        }
    }

    // Correlation of value order (x = i) with physical order (y = position): both are
    // permutations of 0..n, so their sums and sums of squares are equal.
    if n_values > 1 {
        let n = n_values as f64;
        let sum = n * (n - 1.0) / 2.0;
        let sum_sq = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
        let denom = n * sum_sq - sum * sum;
        if denom != 0.0 {
            stats.correlation = Some(((n * corr_xysum - sum * sum) / denom).clamp(-1.0, 1.0));
        }
    }
    stats
}

/// PostgreSQL's `analyze_mcv_list`: how many of the `counts` (most frequent first) are
/// significantly more common than the values left out would be on average.
fn analyze_mcv_list(counts: &[usize], stadistinct: f64, null_frac: f64, sample_rows: f64, total_rows: f64) -> usize {
    let mut num_mcv = counts.len();
    if sample_rows >= total_rows || total_rows <= 1.0 {
        return num_mcv;
    }
    let ndistinct_table = if stadistinct < 0.0 { -stadistinct * total_rows } else { stadistinct };
    let mut sumcount: f64 = counts[..num_mcv.saturating_sub(1)].iter().map(|&c| c as f64).sum();
    while num_mcv > 0 {
        let mut selec = (1.0 - sumcount / sample_rows - null_frac).clamp(0.0, 1.0);
        let otherdistinct = ndistinct_table - (num_mcv as f64 - 1.0);
        if otherdistinct > 1.0 {
            selec /= otherdistinct;
        }
        let big_n = total_rows;
        let n = sample_rows;
        let last = counts[num_mcv - 1] as f64;
        let k = big_n * last / n;
        let variance = n * k * (big_n - k) * (big_n - n) / (big_n * big_n * (big_n - 1.0));
        let stddev = variance.max(0.0).sqrt();
        if last > selec * sample_rows + 2.0 * stddev + 0.5 {
            break;
        }
        num_mcv -= 1;
        if num_mcv == 0 {
            break;
        }
        sumcount -= counts[num_mcv - 1] as f64;
    }
    num_mcv
}

/// The fraction of `index`'s entries that need a heap visit, from short runs of entries
/// starting at sampled values of its leading column (or the whole index when small).
fn index_stats(pool: &BufferPool, table: &TableMeta, index: &IndexMeta, stats: &TableStats, rng: &mut Rng) -> Result<Option<IndexStats>> {
    let Ok(desc) = btree_desc(table, index) else { return Ok(None) };
    let tree = BTree::open(pool, index.locator(), &desc);
    let mut sampled = 0u64;
    let mut flagged = 0u64;
    let mut count_run = |lower: Bound<Vec<Datum>>, limit: usize| -> Result<()> {
        let mut scan = tree.scan(lower, Bound::Unbounded, ScanDirection::Forward)?;
        let mut n = 0;
        while n < limit {
            let Some(entry) = scan.next()? else { break };
            sampled += 1;
            flagged += desc.tid_word(entry).needs_heap_check() as u64;
            n += 1;
        }
        Ok(())
    };
    if stats.rows as usize <= INDEX_SAMPLE_ENTRIES {
        count_run(Bound::Unbounded, usize::MAX)?;
    } else {
        // An expression column has no statistics of its own: the index's first entries.
        let leading = index.columns.first().and_then(|c| stats.columns.get(c.column));
        let mut starts: Vec<Datum> = leading
            .map(|column| column.histogram_bounds.iter().chain(&column.most_common_vals).map(|v| v.0.clone()).collect())
            .unwrap_or_default();
        let runs = INDEX_SAMPLE_ENTRIES / INDEX_SAMPLE_RUN;
        // A random subset of the start points, in no particular order.
        while starts.len() > runs {
            let k = rng.below(starts.len() as u64) as usize;
            starts.swap_remove(k);
        }
        if starts.is_empty() {
            count_run(Bound::Unbounded, INDEX_SAMPLE_ENTRIES)?;
        }
        for start in starts {
            count_run(Bound::Included(vec![start]), INDEX_SAMPLE_RUN)?;
        }
    }
    if sampled == 0 {
        return Ok(None);
    }
    Ok(Some(IndexStats { heap_check_frac: flagged as f64 / sampled as f64, sampled }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: impl IntoIterator<Item = i32>) -> Vec<Datum> {
        v.into_iter().map(Datum::Int4).collect()
    }

    #[test]
    fn unique_column_has_histogram_and_no_mcv() {
        let s = column_stats(ints(0..1000), DataType::Int4, 1000.0);
        assert_eq!(s.null_frac, 0.0);
        assert_eq!(s.n_distinct, -1.0);
        assert!(s.most_common_vals.is_empty());
        assert_eq!(s.histogram_bounds.len(), 101);
        assert_eq!(s.histogram_bounds[0].0, Datum::Int4(0));
        assert_eq!(s.histogram_bounds[100].0, Datum::Int4(999));
        assert!((s.correlation.unwrap() - 1.0).abs() < 1e-9);
        let reversed = column_stats(ints((0..1000).rev()), DataType::Int4, 1000.0);
        assert!((reversed.correlation.unwrap() + 1.0).abs() < 1e-9);
    }

    #[test]
    fn few_values_are_all_most_common() {
        let mut v = ints((0..3000).map(|i| i % 7));
        v.extend(std::iter::repeat_n(Datum::Null, 1000));
        let s = column_stats(v, DataType::Int4, 4000.0);
        assert_eq!(s.null_frac, 0.25);
        assert_eq!(s.n_distinct, 7.0);
        assert_eq!(s.most_common_vals.len(), 7);
        let total: f64 = s.most_common_freqs.iter().sum();
        assert!((total - 0.75).abs() < 1e-9);
        assert!(s.histogram_bounds.is_empty());
    }

    #[test]
    fn skewed_sample_keeps_only_significant_values() {
        // One very common value among many rare ones, sampled from a bigger table.
        let mut v: Vec<Datum> = ints(std::iter::repeat_n(42, 3000));
        v.extend(ints((0..7000).map(|i| 1000 + i / 2)));
        let s = column_stats(v, DataType::Int4, 1_000_000.0);
        assert_eq!(s.most_common_vals.first().map(|v| v.0.clone()), Some(Datum::Int4(42)));
        assert!(s.most_common_vals.len() < 10, "{:?}", s.most_common_vals.len());
        assert!(s.n_distinct != 0.0);
        assert!(!s.histogram_bounds.is_empty());
    }

    #[test]
    fn duj1_estimates_grow_with_the_table() {
        // Half the sample's values seen once, half twice.
        let mut v = ints(0..1000);
        v.extend(ints(0..500));
        let small = column_stats(v.clone(), DataType::Int4, 1500.0);
        let big = column_stats(v, DataType::Int4, 1_000_000.0);
        assert_eq!(small.distinct_values(1500.0), Some(1000.0));
        assert!(big.distinct_values(1_000_000.0).unwrap() > 1000.0);
    }

    #[test]
    fn text_and_all_null_columns() {
        let s = column_stats(vec![Datum::Null; 10], DataType::Text, 10.0);
        assert_eq!(s.null_frac, 1.0);
        assert_eq!(s.n_distinct, 0.0);
        let t = column_stats((0..50).map(|i| Datum::Text(format!("k{}", i % 5))).collect(), DataType::Text, 50.0);
        assert_eq!(t.most_common_vals.len(), 5);
        assert_eq!(t.avg_width, 3.0);
    }

    #[test]
    fn block_sample_is_uniform_and_sized() {
        let mut rng = Rng::new(7);
        let runs = sample_blocks(100_000, &mut rng);
        let blocks: u32 = runs.iter().map(|r| r.end - r.start).sum();
        assert_eq!(blocks as usize, SAMPLE_ROWS);
        assert!(runs.windows(2).all(|w| w[0].end <= w[1].start));
        let whole = sample_blocks(5000, &mut rng);
        assert_eq!(whole.iter().map(|r| r.end - r.start).sum::<u32>(), 5000);
    }
}
