//! Zone maps: per heap block, the smallest and largest non-NULL value of an integer column,
//! so a scan that only wants rows whose value lies in a range (a hash join's probe side,
//! given the range of the build side's keys) skips the blocks that cannot hold one without
//! reading them — DuckDB's min/max row-group pruning, kept per 8 kB block. A bounded sort
//! (ORDER BY ... LIMIT) skips the blocks whose best key cannot beat the rows it keeps; it
//! also keeps maps of text columns, whose values are then 8-byte prefixes
//! (`weft_sort::text_zone_value`).
//!
//! They are a cache beside the buffer pool, never persisted: a sequential scan that wants
//! one and finds none builds it as a side effect (from every tuple on each page, visible
//! or not, so that it covers whatever a later snapshot may see) and publishes it when it
//! has read every block; later scans use it. ANALYZE, when it reads a table whole, builds
//! the maps of all its integer and text columns the same way.
//!
//! Correctness rests on three rules:
//! 1. Every heap write ([`ZoneMaps::begin_write`], held by `HeapInserter` for its whole
//!    life) forgets the relation's maps and bumps its generation; DROP and TRUNCATE forget
//!    them too ([`ZoneMaps::forget`]).
//! 2. A build starts only while no writer is active, and publishes only if the generation
//!    is still the one it started at and no writer is active: a map never misses a tuple
//!    written before it was published.
//! 3. Blocks past the map's end (appended later: but then rule 1 dropped the map) are never
//!    skipped.

use std::collections::HashMap;
use std::ops::Range;

use crate::sync::{Arc, Mutex};

use crate::{BlockNumber, RelFileLocator};

/// The values of one integer column (or text prefixes), per block: `(min, max)` of its non-NULL values;
/// `(i64::MAX, i64::MIN)` for a block with none.
#[derive(Debug)]
pub struct ZoneMap {
    blocks: Vec<(i64, i64)>,
    /// The `(min, max)` over every block ([`NO_VALUES`] when none has a value).
    bounds: (i64, i64),
    /// Non-NULL values over every block, of tuples visible or not: at least as many as any
    /// snapshot sees (a build side read whole can size its table from it up front).
    values: u64,
}

/// What a map records of one block: its values' `(min, max)` and how many there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockZone {
    pub range: (i64, i64),
    pub values: u32,
}

impl ZoneMap {
    /// May block `block` hold a value in `lo..=hi`? (Blocks past the map: maybe.)
    #[inline]
    pub fn may_contain(&self, block: BlockNumber, lo: i64, hi: i64) -> bool {
        match self.blocks.get(block as usize) {
            Some(&(min, max)) => min <= hi && lo <= max,
            None => true,
        }
    }

    /// The `(min, max)` of block `block`'s values, or `None` past the map's end.
    #[inline]
    pub fn range(&self, block: BlockNumber) -> Option<(i64, i64)> {
        self.blocks.get(block as usize).copied()
    }

    /// How many of the blocks it covers may hold a value in `lo..=hi`.
    pub fn blocks_meeting(&self, lo: i64, hi: i64) -> usize {
        self.blocks.iter().filter(|&&(min, max)| min <= hi && lo <= max).count()
    }

    /// The smallest and largest value of the whole relation, `None` when it has none.
    pub fn bounds(&self) -> Option<(i64, i64)> {
        (self.bounds.0 <= self.bounds.1).then_some(self.bounds)
    }

    /// How many non-NULL values the relation's tuples hold, visible or not (an upper
    /// bound of the rows with a value any snapshot sees).
    pub fn values(&self) -> u64 {
        self.values
    }

    /// Blocks the map covers.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// A map being built by the participants of one scan, each adding the blocks it read.
#[derive(Debug)]
pub struct ZoneMapBuild {
    rel: RelFileLocator,
    column: usize,
    generation: u64,
    blocks: Mutex<BuildBlocks>,
}

/// A build's blocks so far: their ranges, how many were added, their values.
#[derive(Debug)]
struct BuildBlocks {
    ranges: Vec<(i64, i64)>,
    added: usize,
    values: u64,
}

impl ZoneMapBuild {
    /// Record what blocks hold: one participant's share.
    pub fn add_all(&self, zones: &[(BlockNumber, BlockZone)]) {
        let mut blocks = self.blocks.lock();
        for &(block, zone) in zones {
            if let Some(slot) = blocks.ranges.get_mut(block as usize) {
                *slot = zone.range;
                blocks.added += 1;
                blocks.values += u64::from(zone.values);
            }
        }
    }
}

/// The empty range of a block without values.
pub const NO_VALUES: (i64, i64) = (i64::MAX, i64::MIN);

#[derive(Default)]
struct RelZones {
    writers: usize,
    generation: u64,
    maps: HashMap<usize, Arc<ZoneMap>>,
}

/// The pool's zone maps, per relation and column.
#[derive(Default)]
pub struct ZoneMaps {
    rels: Mutex<Registry>,
}

/// Generations come from one clock, so a relation forgotten and seen again never gets a
/// generation an older build started at.
#[derive(Default)]
struct Registry {
    rels: HashMap<RelFileLocator, RelZones>,
    clock: u64,
}

impl Registry {
    fn zones(&mut self, rel: RelFileLocator) -> &mut RelZones {
        let clock = self.clock;
        self.rels.entry(rel).or_insert_with(|| RelZones { generation: clock, ..RelZones::default() })
    }

    /// A new generation for `rel` (a write began or ended, or it was dropped).
    fn bump(&mut self, rel: RelFileLocator) -> &mut RelZones {
        self.clock += 1;
        let clock = self.clock;
        let zones = self.zones(rel);
        zones.generation = clock;
        zones
    }
}

impl std::fmt::Debug for ZoneMaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZoneMaps").field("relations", &self.rels.lock().rels.len()).finish()
    }
}

/// Held while a heap writer may add tuples to a relation (see [`ZoneMaps::begin_write`]).
pub struct ZoneWriteGuard {
    maps: Arc<ZoneMaps>,
    rel: RelFileLocator,
}

impl Drop for ZoneWriteGuard {
    fn drop(&mut self) {
        let mut rels = self.maps.rels.lock();
        let zones = rels.bump(self.rel);
        zones.writers = zones.writers.saturating_sub(1);
    }
}

impl ZoneMaps {
    /// A writer is about to add tuples to `rel`: its maps are forgotten, and no map is
    /// built or published until the guard is dropped.
    pub fn begin_write(self: &Arc<Self>, rel: RelFileLocator) -> ZoneWriteGuard {
        let mut rels = self.rels.lock();
        let zones = rels.bump(rel);
        zones.writers += 1;
        zones.maps.clear();
        ZoneWriteGuard { maps: self.clone(), rel }
    }

    /// `rel` is dropped or truncated.
    pub fn forget(&self, rel: RelFileLocator) {
        let mut rels = self.rels.lock();
        rels.clock += 1;
        let clock = rels.clock;
        if let Some(zones) = rels.rels.get_mut(&rel) {
            zones.generation = clock;
            zones.maps.clear();
            if zones.writers == 0 {
                rels.rels.remove(&rel);
            }
        }
    }

    /// The map of `column` of `rel`, if one was built since the last write.
    pub fn get(&self, rel: RelFileLocator, column: usize) -> Option<Arc<ZoneMap>> {
        self.rels.lock().rels.get(&rel).and_then(|z| z.maps.get(&column).cloned())
    }

    /// Start building the map of `column` over blocks `0..nblocks` of `rel`: `None` while
    /// a writer is active.
    pub fn begin_build(&self, rel: RelFileLocator, column: usize, nblocks: BlockNumber) -> Option<ZoneMapBuild> {
        let mut rels = self.rels.lock();
        let zones = rels.zones(rel);
        if zones.writers > 0 {
            return None;
        }
        Some(ZoneMapBuild {
            rel,
            column,
            generation: zones.generation,
            blocks: Mutex::new(BuildBlocks { ranges: vec![NO_VALUES; nblocks as usize], added: 0, values: 0 }),
        })
    }

    /// Publish a build whose participants added every block; false (nothing published)
    /// when a block is missing or the relation was written meanwhile.
    pub fn publish(&self, build: ZoneMapBuild) -> bool {
        let BuildBlocks { ranges: blocks, added, values } = build.blocks.into_inner();
        if added != blocks.len() {
            return false;
        }
        let mut rels = self.rels.lock();
        let Some(zones) = rels.rels.get_mut(&build.rel) else { return false };
        if zones.writers > 0 || zones.generation != build.generation {
            return false;
        }
        let bounds = blocks.iter().fold(NO_VALUES, |(lo, hi), &(min, max)| (lo.min(min), hi.max(max)));
        zones.maps.insert(build.column, Arc::new(ZoneMap { blocks, bounds, values }));
        true
    }

}

/// The runs of consecutive blocks of `blocks` that `keep` says yes to, in order.
pub fn block_runs(blocks: Range<BlockNumber>, keep: impl Fn(BlockNumber) -> bool) -> impl Iterator<Item = Range<BlockNumber>> {
    let mut next = blocks.start;
    std::iter::from_fn(move || {
        let start = (next..blocks.end).find(|&b| keep(b))?;
        let end = (start + 1..blocks.end).find(|&b| !keep(b)).unwrap_or(blocks.end);
        next = end;
        Some(start..end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel() -> RelFileLocator {
        RelFileLocator { spc_oid: 0, db_oid: 1, rel_number: 7 }
    }

    fn build(maps: &Arc<ZoneMaps>, ranges: &[(i64, i64)]) -> ZoneMapBuild {
        let build = maps.begin_build(rel(), 0, ranges.len() as BlockNumber).expect("no writer");
        let numbered: Vec<(BlockNumber, BlockZone)> =
            ranges.iter().enumerate().map(|(b, &range)| (b as BlockNumber, BlockZone { range, values: u32::from(range != NO_VALUES) })).collect();
        build.add_all(&numbered);
        build
    }

    #[test]
    fn a_published_map_skips_blocks_outside_the_range() {
        let maps = Arc::new(ZoneMaps::default());
        assert!(maps.publish(build(&maps, &[(1, 10), (11, 20), NO_VALUES, (5, 30)])));
        let map = maps.get(rel(), 0).expect("published");
        let runs = |blocks: Range<BlockNumber>, lo, hi| block_runs(blocks, |b| map.may_contain(b, lo, hi)).collect::<Vec<_>>();
        assert_eq!(runs(0..6, 12, 15), vec![1..2, 3..6]);
        assert_eq!(runs(0..4, 31, 40), Vec::<Range<BlockNumber>>::new());
        assert_eq!(runs(3..6, 0, 100), vec![3..6], "one run through the map's end");
        assert!(map.may_contain(10, 100, 200), "blocks past the map are never skipped");
        assert_eq!((map.bounds(), map.values()), (Some((1, 30)), 3));
        assert!(maps.publish(build(&maps, &[NO_VALUES])));
        let empty = maps.get(rel(), 0).expect("published");
        assert_eq!((empty.bounds(), empty.values()), (None, 0));
    }

    #[test]
    fn writes_forget_maps_and_stop_builds() {
        let maps = Arc::new(ZoneMaps::default());
        assert!(maps.publish(build(&maps, &[(1, 10)])));
        // A writer forgets the map and blocks new builds while it lives.
        let guard = maps.begin_write(rel());
        assert!(maps.get(rel(), 0).is_none());
        assert!(maps.begin_build(rel(), 0, 1).is_none());
        drop(guard);
        // A build overtaken by a write is not published.
        let overtaken = build(&maps, &[(1, 10)]);
        drop(maps.begin_write(rel()));
        assert!(!maps.publish(overtaken));
        assert!(maps.get(rel(), 0).is_none());
        // Nor is one that missed a block.
        let partial = maps.begin_build(rel(), 0, 2).expect("no writer");
        partial.add_all(&[(0, BlockZone { range: (1, 2), values: 2 })]);
        assert!(!maps.publish(partial));
        // DROP / TRUNCATE forget.
        assert!(maps.publish(build(&maps, &[(1, 10)])));
        maps.forget(rel());
        assert!(maps.get(rel(), 0).is_none());
    }
}
