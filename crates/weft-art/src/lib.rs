//! weft-art: the adaptive radix tree (Leis, Kemper, Neumann, ICDE 2013) and its
//! concurrent variant with optimistic lock coupling (Leis et al., DaMoN 2016).
//!
//! This crate depends on no other weft crate: it is tested, fuzzed and
//! benchmarked alone. `weft-storage` builds its ART page table on [`olc`].
//!
//! - [`art`]: `Art<V>`, a single-threaded tree over byte-string keys.
//! - [`olc`]: `OlcArt`, a concurrent tree over fixed-length keys with `u64`
//!   values, nodes drawn from a fixed-size [`olc::NodePool`].

pub mod art;
pub mod olc;
