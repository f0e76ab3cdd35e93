//! Asks the kernel to back the pool's slabs with transparent huge pages.
//!
//! # Safety contract
//! This is the only module of `olc/` with `unsafe`: one call of `madvise(2)` with
//! `MADV_HUGEPAGE` on a range that lies inside an allocation the caller owns (the
//! range is rounded *inwards* to 2 MiB boundaries, so it never leaves the allocation).
//! `MADV_HUGEPAGE` is a hint: it changes neither the contents nor the validity of the
//! memory, and its failure (no THP support, a seccomp filter) is ignored. The caller
//! must call it before first touching the memory, or the kernel keeps 4 KiB pages
//! already faulted in (a performance matter only).
//!
//! Why: a pool sized for a million entries is a few hundred MiB of slabs; a lookup
//! touches two or three random nodes in them, and with 4 KiB pages each is a TLB miss
//! and a page walk. With 2 MiB pages the page table of the hot slabs fits the TLB.
#![allow(unsafe_code)]

/// Advises huge pages for `[start, start + len)` (rounded inwards to 2 MiB).
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
