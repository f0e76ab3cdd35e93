//! A sorted run kept in memory, laid out like a run on tape: length-prefixed tuples one
//! after another, in order, in chunks, with a sparse index every `INDEX_EVERY` tuples.
//!
//! Why not just the sorted pointer array of `MemTuples`? Reading tuples in sorted order
//! through pointers visits the arena at random, and for a large budget nearly every visit
//! misses the TLB and the caches: gigabyte-sized in-memory sorts were slower than external
//! ones. So a participant sorts sub-runs of at most `DEFAULT_SUB_RUN_BYTES` (small enough that the
//! random visits stay cheap), copies each into a `MemRun` in order, and merges those
//! sequentially. Every later reader (the participant's own merge, the leader's merge,
//! the partitioned merge) then streams memory front to back.

use std::sync::Arc;

use crate::arena::TupleChunks;
use crate::tape::INDEX_EVERY;

/// Largest sub-run sorted through pointers before it is laid out in order.
pub const DEFAULT_SUB_RUN_BYTES: usize = 32 << 20;

/// A sparse-index entry: the `ordinal`-th tuple starts at `offset` of `chunk`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemIndexEntry {
    pub ordinal: u64,
    pub chunk: u32,
    pub offset: u32,
}

#[derive(Debug, Default)]
pub(crate) struct MemRun {
    chunks: TupleChunks,
    count: u64,
    index: Vec<MemIndexEntry>,
}

impl MemRun {
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Memory held (chunk capacities and the index).
    pub fn bytes(&self) -> usize {
        self.chunks.bytes() + self.index.capacity() * std::mem::size_of::<MemIndexEntry>()
    }

    pub fn index(&self) -> &[MemIndexEntry] {
        &self.index
    }

    /// The tuple starting at (`chunk`, `offset`).
    pub fn tuple_at(&self, chunk: u32, offset: u32) -> &[u8] {
        self.chunks.tuple_at(chunk, offset)
    }

    pub fn end(&self) -> MemPosition {
        MemPosition { ordinal: self.count, chunk: self.chunks.chunk_count() as u32, offset: 0 }
    }
}

/// A place in a `MemRun`: the `ordinal`-th tuple, at (`chunk`, `offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemPosition {
    pub ordinal: u64,
    pub chunk: u32,
    pub offset: u32,
}

/// Appends tuples, in order, to a new `MemRun`.
pub(crate) struct MemRunWriter {
    run: MemRun,
}

impl MemRunWriter {
    pub fn new(chunk_size: usize) -> MemRunWriter {
        MemRunWriter { run: MemRun { chunks: TupleChunks::new(chunk_size), ..MemRun::default() } }
    }

    #[inline]
    pub fn write(&mut self, tuple: &[u8]) {
        let run = &mut self.run;
        let (chunk, offset) = run.chunks.push(tuple);
        if run.count % INDEX_EVERY == 0 {
            run.index.push(MemIndexEntry { ordinal: run.count, chunk, offset });
        }
        run.count += 1;
    }

    pub fn finish(self) -> MemRun {
        self.run
    }
}

/// Who a reader's run belongs to: a shared run stays whole; an owned one gives each chunk
/// back as soon as the reader has passed it (a participant merging its sub-runs keeps its
/// memory within budget that way).
pub(crate) enum RunHandle {
    Shared(Arc<MemRun>),
    Owned(MemRun),
}

impl RunHandle {
    fn run(&self) -> &MemRun {
        match self {
            RunHandle::Shared(run) => run,
            RunHandle::Owned(run) => run,
        }
    }
}

/// Reads `count` tuples of a `MemRun` from a position.
pub(crate) struct MemRunReader {
    handle: RunHandle,
    chunk: u32,
    offset: u32,
    remaining: u64,
    /// The current tuple's (chunk, offset).
    current: Option<(u32, u32)>,
}

impl MemRunReader {
    pub fn new(handle: RunHandle, from: MemPosition, count: u64) -> MemRunReader {
        MemRunReader { handle, chunk: from.chunk, offset: from.offset, remaining: count, current: None }
    }

    pub fn whole(run: MemRun) -> MemRunReader {
        let count = run.count;
        MemRunReader::new(RunHandle::Owned(run), MemPosition { ordinal: 0, chunk: 0, offset: 0 }, count)
    }

    #[inline]
    pub fn current(&self) -> Option<&[u8]> {
        self.current.map(|(chunk, offset)| self.handle.run().chunks.tuple_at(chunk, offset))
    }

    /// Move to the next tuple; `false` when done.
    #[inline]
    pub fn advance(&mut self) -> bool {
        if self.remaining == 0 {
            self.current = None;
            return false;
        }
        while self.offset as usize >= self.handle.run().chunks.chunk_len(self.chunk as usize) {
            // This chunk is passed: an owned run gives it back now.
            if let RunHandle::Owned(run) = &mut self.handle {
                run.chunks.free_chunk(self.chunk as usize);
            }
            self.chunk += 1;
            self.offset = 0;
        }
        let chunks = &self.handle.run().chunks;
        let stored = chunks.stored_len(self.chunk, self.offset);
        self.current = Some((self.chunk, self.offset));
        self.offset += stored as u32;
        self.remaining -= 1;
        true
    }

    /// Position of the tuple after the current one (`ordinal` is the caller's to track).
    pub fn position_after_current(&self, ordinal: u64) -> MemPosition {
        MemPosition { ordinal, chunk: self.chunk, offset: self.offset }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back_across_chunks() {
        let mut writer = MemRunWriter::new(64);
        let tuples: Vec<Vec<u8>> = (0..1000u32).map(|i| vec![(i % 251) as u8; (i % 37) as usize]).collect();
        for t in &tuples {
            writer.write(t);
        }
        let run = writer.finish();
        assert_eq!(run.count(), 1000);
        assert_eq!(run.index().len(), 1000usize.div_ceil(INDEX_EVERY as usize));
        let entry = run.index()[1];
        assert_eq!(run.tuple_at(entry.chunk, entry.offset), &tuples[INDEX_EVERY as usize][..]);
        let mut reader = MemRunReader::whole(run);
        for t in &tuples {
            assert!(reader.advance());
            assert_eq!(reader.current().unwrap(), &t[..]);
        }
        assert!(!reader.advance());
    }
}
