//! Length-prefixed tuples in chunks of memory: the storage under both the sort buffer
//! (`MemTuples`, which visits it through pointers) and in-memory runs (`MemRun`, which
//! stream it front to back).

const LEN_BYTES: usize = 4;

enum Place {
    Current,
    Next,
    New,
}

#[derive(Debug, Default)]
pub(crate) struct TupleChunks {
    chunk_size: usize,
    chunks: Vec<Vec<u8>>,
    /// The chunk being filled; after `reset`, later chunks are empty and reused in turn.
    current: usize,
    /// Capacity of all chunks.
    bytes: usize,
}

impl TupleChunks {
    /// Chunks of `chunk_size` bytes (a larger tuple gets a chunk of its own). Chunks of 2 MiB
    /// and more are backed by huge pages where the kernel allows.
    pub fn new(chunk_size: usize) -> TupleChunks {
        TupleChunks { chunk_size, ..TupleChunks::default() }
    }

    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Bytes of chunk `index` in use (0 once given back).
    pub fn chunk_len(&self, index: usize) -> usize {
        self.chunks[index].len()
    }

    /// Where a `need`-byte push goes: the current chunk, the next kept one, or a new one.
    #[inline]
    fn place_for(&self, need: usize) -> Place {
        match self.chunks.get(self.current) {
            Some(chunk) if chunk.capacity() - chunk.len() >= need => Place::Current,
            Some(_) if self.chunks.get(self.current + 1).is_some_and(|next| next.capacity() >= need) => Place::Next,
            _ => Place::New,
        }
    }

    /// Memory `push` of a `tuple_len`-byte tuple would add.
    pub fn growth_for(&self, tuple_len: usize) -> usize {
        let need = tuple_len + LEN_BYTES;
        match self.place_for(need) {
            Place::Current | Place::Next => 0,
            Place::New => need.max(self.chunk_size),
        }
    }

    /// Append a tuple; returns where its length word starts.
    #[inline]
    pub fn push(&mut self, tuple: &[u8]) -> (u32, u32) {
        let need = tuple.len() + LEN_BYTES;
        match self.place_for(need) {
            Place::Current => {}
            Place::Next => self.current += 1,
            Place::New => {
                let mut chunk = Vec::with_capacity(need.max(self.chunk_size));
                weft_storage::memhint::advise_huge_pages(&mut chunk);
                self.bytes += chunk.capacity();
                // Kept chunks past the current one are too small for this tuple: it goes last.
                self.chunks.push(chunk);
                self.current = self.chunks.len() - 1;
            }
        }
        let index = self.current;
        let chunk = &mut self.chunks[index];
        let offset = chunk.len();
        chunk.extend_from_slice(&(tuple.len() as u32).to_le_bytes());
        chunk.extend_from_slice(tuple);
        (index as u32, offset as u32)
    }

    /// The tuple whose length word starts at (`chunk`, `offset`).
    #[inline(always)]
    pub fn tuple_at(&self, chunk: u32, offset: u32) -> &[u8] {
        let data = &self.chunks[chunk as usize];
        let offset = offset as usize;
        let len = u32::from_le_bytes(data[offset..offset + LEN_BYTES].try_into().expect("4 bytes")) as usize;
        &data[offset + LEN_BYTES..offset + LEN_BYTES + len]
    }

    /// Start loading the tuple at (`chunk`, `offset`) into cache.
    #[inline(always)]
    pub fn prefetch(&self, chunk: u32, offset: u32) {
        weft_storage::memhint::prefetch(&self.chunks[chunk as usize][offset as usize..]);
    }

    /// Bytes the tuple at (`chunk`, `offset`) takes, length word included.
    #[inline(always)]
    pub fn stored_len(&self, chunk: u32, offset: u32) -> usize {
        LEN_BYTES + self.tuple_at(chunk, offset).len()
    }

    /// Forget every tuple but keep the chunks for the next ones: a sort buffer refilled
    /// sub-run after sub-run reuses memory that is already mapped, instead of having the
    /// kernel zero fresh pages each time (a quarter of a big index build's time before).
    pub fn reset(&mut self) {
        for chunk in &mut self.chunks {
            chunk.clear();
        }
        self.current = 0;
    }

    /// Give chunk `index` back (a reader that has passed it and owns the chunks).
    pub fn free_chunk(&mut self, index: usize) {
        self.chunks[index] = Vec::new();
    }
}
