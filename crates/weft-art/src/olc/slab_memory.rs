//! The memory of the pool's slabs: allocated zeroed, so that a slot costs resident
//! memory only once it is first used, and advised to be backed by huge pages.
//!
//! # Safety contract
//! This is the only module of `olc/` with `unsafe`, for two things:
//!
//! 1. [`zeroed_slots`]: one `alloc_zeroed` of `count` values of a [`ZeroValid`] type and
//!    its conversion into a `Box<[T]>` with the same layout. `ZeroValid` is implemented
//!    here, and only here, for the node layouts (`Leaf`, `Node4`, `Node16`, `Node48`,
//!    `Node256`), which consist of `std` integer atomics and arrays of them only — types
//!    for which every bit pattern, all zeros included, is a valid value. Under the
//!    `shuttle` feature the atomics are shuttle's, which are not plain memory: those
//!    builds construct every slot instead and implement nothing here.
//!    All-zero is also the state `new()` gives each layout (version 0, no children, an
//!    empty Node48 index), so a slot taken from zeroed memory is the same as a
//!    constructed one.
//! 2. [`advise`]: one call of `madvise(2)` with `MADV_HUGEPAGE` on a range inside an
//!    allocation the caller owns (rounded *inwards* to 2 MiB boundaries). It is a hint:
//!    it changes neither the contents nor the validity of the memory, and its failure is
//!    ignored. It is made before the memory is first touched.
//!
//! Why zeroed: the pool is sized for its worst case (every inner node at its smallest
//! fill), several hundred bytes per entry, and constructing every slot at start-up made
//! all of it resident. Fresh pages from the OS are zero already and are faulted in when a
//! slot is first written, so resident memory follows the nodes in use.
//!
//! Why huge pages: a pool sized for a million entries is a few hundred MiB of slabs; a
//! lookup touches two or three random nodes in them, and with 4 KiB pages each is a TLB
//! miss and a page walk. With 2 MiB pages the page table of the hot slabs fits the TLB.
#![allow(unsafe_code)]

/// `count` empty slots of a node layout.
pub(crate) trait EmptySlots: Sized {
    fn empty_slots(count: usize) -> Box<[Self]>;
}

#[cfg(not(feature = "shuttle"))]
mod zeroed {
    use std::alloc::{alloc_zeroed, handle_alloc_error, Layout};

    use super::super::node::{Leaf, Node16, Node256, Node4, Node48};
    use super::{advise, EmptySlots};

    /// Types whose all-zero bit pattern is a valid value.
    ///
    /// # Safety
    /// Only for types made of `std` integer atomics, arrays of them and structs of those
    /// (the node layouts below); see the module's contract.
    pub(crate) unsafe trait ZeroValid {}

    // SAFETY: each is a `#[repr(Rust)]` struct of `std` integer atomics (and arrays of
    // them, and the `Header` of four `AtomicU64`s): any bit pattern is a valid value.
    unsafe impl ZeroValid for Leaf {}
    unsafe impl ZeroValid for Node4 {}
    unsafe impl ZeroValid for Node16 {}
    unsafe impl ZeroValid for Node48 {}
    unsafe impl ZeroValid for Node256 {}

    /// `count` all-zero values of `T`, in memory the allocator may hand out untouched.
    pub(crate) fn zeroed_slots<T: ZeroValid>(count: usize) -> Box<[T]> {
        if count == 0 || std::mem::size_of::<T>() == 0 {
            return Box::new([]);
        }
        let Ok(layout) = Layout::array::<T>(count) else {
            handle_alloc_error(Layout::new::<T>());
        };
        // SAFETY: `layout` has a non-zero size (count > 0, T not zero-sized).
        let start = unsafe { alloc_zeroed(layout) }.cast::<T>();
        if start.is_null() {
            handle_alloc_error(layout);
        }
        advise(start.cast::<u8>(), layout.size());
        // SAFETY: `start` is a live allocation of the global allocator with the layout of
        // `[T; count]`, all bytes zero, which is a valid `T` each (`ZeroValid`); the box
        // frees it with the same layout.
        unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(start, count)) }
    }

    macro_rules! zeroed_empty_slots {
        ($($layout:ty),*) => {$(
            impl EmptySlots for $layout {
                fn empty_slots(count: usize) -> Box<[Self]> {
                    zeroed_slots(count)
                }
            }
        )*};
    }
    zeroed_empty_slots!(Leaf, Node4, Node16, Node48, Node256);
}

#[cfg(feature = "shuttle")]
mod constructed {
    use super::super::node::{Leaf, Node16, Node256, Node4, Node48};
    use super::EmptySlots;

    macro_rules! constructed_empty_slots {
        ($($layout:ty),*) => {$(
            impl EmptySlots for $layout {
                fn empty_slots(count: usize) -> Box<[Self]> {
                    (0..count).map(|_| <$layout>::new()).collect()
                }
            }
        )*};
    }
    constructed_empty_slots!(Leaf, Node4, Node16, Node48, Node256);
}

/// Advises huge pages for `[start, start + len)` (rounded inwards to 2 MiB).
#[cfg_attr(feature = "shuttle", allow(dead_code))]
pub(crate) fn advise(start: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE_PAGE_BYTES: usize = 2 << 20;
        let first = (start as usize).next_multiple_of(HUGE_PAGE_BYTES);
        let end = (start as usize).saturating_add(len) & !(HUGE_PAGE_BYTES - 1);
        if end > first {
            // SAFETY: [first, end) is inside the caller's live allocation (rounded
            // inwards); MADV_HUGEPAGE does not change the memory's contents or validity.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (start, len);
    }
}
