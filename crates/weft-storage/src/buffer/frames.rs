//! The pool's page frames: one zeroed allocation of `n` pages, reserved at start-up and
//! backed by memory only as frames are first used.
//!
//! A frame allocated as its own `Box` is written (zeroed) when it is allocated, so a pool
//! touched every byte of `shared_buffers` before its first query: 4 s at 1GB and 33 s at
//! 8GB on these machines, where a page the kernel hands out for the first time costs a
//! hypervisor fault. PostgreSQL's shared memory is likewise mapped once and faulted in as
//! used. `calloc` of a large block maps fresh anonymous memory, which the kernel zero-fills
//! on first touch, so nothing is touched here.
//!
//! # Safety contract
//!
//! This module's `unsafe` code rests on these rules:
//! - `FrameMemory` owns one block from the system allocator's `calloc` (`System`'s
//!   `alloc_zeroed` with an alignment of 16, which is `calloc`), of `n * PAGE_SIZE` bytes
//!   plus one page of slack, and frees it with the same layout when dropped. Every byte of
//!   it is initialized (zero) from the start.
//! - `FrameMemory::frames` is called once and hands out `Frame` `i` as a pointer to bytes
//!   `[base + i * PAGE_SIZE, base + (i + 1) * PAGE_SIZE)` of the block, `base` being the
//!   block's first page-aligned address: frames are disjoint and inside the block.
//! - A `Frame` is only used through the content lock (`RwLock<Frame>`) of the pool's
//!   `Arena`, which holds the `FrameMemory` beside the frames, so shared (`&Page`) and
//!   exclusive (`&mut Page`) access follow the lock's rules and no frame is used after
//!   the block is freed (the arena drops both together; a `Frame` has no `Drop`).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::{Page, PAGE_SIZE};

/// One `calloc`ed block holding every frame of a pool.
pub(super) struct FrameMemory {
    block: NonNull<u8>,
    layout: Layout,
    frames: usize,
}

// SAFETY: the block is plain memory; it is reached only through `Frame`s (see the
// module's contract), which the content locks serialize.
unsafe impl Send for FrameMemory {}
unsafe impl Sync for FrameMemory {}

impl FrameMemory {
    pub(super) fn new(frames: usize) -> FrameMemory {
        let size = frames.checked_mul(PAGE_SIZE).and_then(|s| s.checked_add(PAGE_SIZE)).expect("pool size overflows");
        // Alignment 16 (the allocator's minimum) makes `System.alloc_zeroed` a `calloc`,
        // which does not write memory it maps fresh; page alignment is taken inside.
        let layout = Layout::from_size_align(size, 16).expect("pool layout");
        // SAFETY: the layout's size is not zero.
        let block = unsafe { System.alloc_zeroed(layout) };
        let block = NonNull::new(block).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        FrameMemory { block, layout, frames }
    }

    /// The frames, in order; call once.
    pub(super) fn frames(&self) -> impl Iterator<Item = Frame> + '_ {
        let misalignment = self.block.as_ptr() as usize % PAGE_SIZE;
        let skip = if misalignment == 0 { 0 } else { PAGE_SIZE - misalignment };
        (0..self.frames).map(move |i| {
            // SAFETY: `skip + (i + 1) * PAGE_SIZE <= frames * PAGE_SIZE + PAGE_SIZE`, the
            // block's size: the frame lies inside the block.
            let frame = unsafe { self.block.as_ptr().add(skip + i * PAGE_SIZE) };
            Frame(NonNull::new(frame.cast::<Page>()).expect("inside a non-null block"))
        })
    }
}

impl Drop for FrameMemory {
    fn drop(&mut self) {
        // SAFETY: allocated by `System.alloc_zeroed` with this layout, freed once.
        unsafe { System.dealloc(self.block.as_ptr(), self.layout) }
    }
}

/// One page frame of the pool, used through its content lock.
pub(super) struct Frame(NonNull<Page>);

// SAFETY: a frame is disjoint memory; the content lock around it orders all access.
unsafe impl Send for Frame {}
unsafe impl Sync for Frame {}

impl Deref for Frame {
    type Target = Page;

    fn deref(&self) -> &Page {
        // SAFETY: inside the live, initialized block; `&self` comes through the content
        // lock's shared or exclusive guard.
        unsafe { self.0.as_ref() }
    }
}

impl DerefMut for Frame {
    fn deref_mut(&mut self) -> &mut Page {
        // SAFETY: as for `deref`; `&mut self` comes through the exclusive guard.
        unsafe { self.0.as_mut() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_zeroed_disjoint_and_page_aligned() {
        let memory = FrameMemory::new(9);
        let mut frames: Vec<Frame> = memory.frames().collect();
        assert_eq!(frames.len(), 9);
        for (i, frame) in frames.iter_mut().enumerate() {
            assert_eq!(frame.as_ptr() as usize % PAGE_SIZE, 0);
            assert!(frame.iter().all(|&b| b == 0));
            frame.fill(i as u8 + 1);
        }
        for (i, frame) in frames.iter().enumerate() {
            assert!(frame.iter().all(|&b| b == i as u8 + 1), "frame {i} was overwritten by a neighbour");
        }
    }
}
