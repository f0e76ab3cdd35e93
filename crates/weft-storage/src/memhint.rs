//! Hints to the CPU and the kernel about memory we are about to use.
//!
//! # Safety contract
//!
//! This is the one module of `weft-storage` with `unsafe` code, and it only passes
//! addresses of live, owned Rust slices to instructions and system calls that neither
//! read nor write through them on our behalf:
//! - `prefetch` issues `PREFETCHT0` for an address inside a slice; a prefetch never
//!   faults and has no visible effect other than timing.
//! - `advise_huge_pages` calls `madvise(MADV_HUGEPAGE)` on the 2 MiB-aligned part of a
//!   slice's memory; the advice may change how the kernel backs the pages, never their
//!   contents, and the memory stays owned by the slice's allocation.
//! - `zeroed_atomics` asks the global allocator for zeroed memory and hands it out as
//!   a boxed slice of `AtomicU64`, whose all-zero bit pattern is the value 0.
#![allow(unsafe_code)]

use std::sync::atomic::AtomicU64;

/// Ask the CPU to bring the cache line holding the start of `value` closer (no-op for an
/// empty slice or a zero-sized value).
#[inline(always)]
pub fn prefetch<T: ?Sized>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    if std::mem::size_of_val(value) != 0 {
        // SAFETY: the pointer is to a live value; PREFETCHT0 does not access memory
        // architecturally and cannot fault (see the module's contract).
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(value as *const T as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

const HUGE_PAGE: usize = 2 << 20;

/// Ask the kernel to back `buffer`'s whole capacity with transparent huge pages where it
/// can: a large, randomly accessed buffer (a sort's tuple arena, a hash join's tuples and
/// buckets) then costs far fewer TLB misses. Best effort: errors are ignored. Call it
/// before the memory is first touched: pages already faulted in stay small.
pub fn advise_huge_pages<T>(buffer: &mut Vec<T>) {
    let start = buffer.as_mut_ptr() as usize;
    // [start, end) is `buffer`'s allocation, borrowed mutably for the call.
    advise_range_huge(start, start + buffer.capacity() * std::mem::size_of::<T>());
}

/// `madvise(MADV_HUGEPAGE)` on the 2 MiB-aligned part of `[start, end)`, which must lie
/// inside one live allocation the caller owns.
fn advise_range_huge(start: usize, end: usize) {
    #[cfg(target_os = "linux")]
    {
        let aligned_start = start.next_multiple_of(HUGE_PAGE);
        let aligned_end = end / HUGE_PAGE * HUGE_PAGE;
        if aligned_end > aligned_start {
            // SAFETY: [aligned_start, aligned_end) lies inside the caller's allocation;
            // MADV_HUGEPAGE does not change the memory's contents or ownership (see the
            // module's contract).
            unsafe {
                libc::madvise(aligned_start as *mut libc::c_void, aligned_end - aligned_start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, end);
}

/// `n` atomics holding 0, in memory the allocator hands out zeroed: fresh pages from
/// the kernel are not written here (a loop storing zeros would fault in every page in
/// the calling thread), so they are faulted in, zeroed by the kernel, by whichever
/// threads first touch them. Backed by huge pages where the kernel can.
pub fn zeroed_atomics(n: usize) -> Box<[AtomicU64]> {
    if n == 0 {
        return Box::new([]);
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(n).expect("an array of atomics that fits the address space");
    // SAFETY: `layout` has a non-zero size. The memory is zeroed, and all-zero bytes are a
    // valid `AtomicU64` (0); the box takes ownership of exactly `layout`'s allocation,
    // which the global allocator made, so dropping it frees it with the same layout.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut AtomicU64;
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        advise_range_huge(ptr as usize, ptr as usize + layout.size());
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hints_are_harmless() {
        let mut v = vec![7u8; 8 << 20];
        v.reserve(1 << 20);
        super::advise_huge_pages(&mut v);
        super::prefetch(&v[12345..]);
        super::prefetch::<[u8]>(&[]);
        assert!(v.iter().all(|&b| b == 7));
    }

    #[test]
    fn zeroed_atomics_hold_zero_and_take_stores() {
        use std::sync::atomic::Ordering;
        for n in [0, 1, 1000, 3 << 20] {
            let a = super::zeroed_atomics(n);
            assert_eq!(a.len(), n);
            assert!(a.iter().all(|x| x.load(Ordering::Relaxed) == 0));
            if let Some(last) = a.last() {
                last.store(u64::MAX, Ordering::Relaxed);
                assert_eq!(last.load(Ordering::Relaxed), u64::MAX);
            }
        }
    }
}
