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
#![allow(unsafe_code)]

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
    #[cfg(target_os = "linux")]
    {
        let start = buffer.as_mut_ptr() as usize;
        let end = start + buffer.capacity() * std::mem::size_of::<T>();
        let aligned_start = start.next_multiple_of(HUGE_PAGE);
        let aligned_end = end / HUGE_PAGE * HUGE_PAGE;
        if aligned_end > aligned_start {
            // SAFETY: [aligned_start, aligned_end) lies inside `buffer`'s allocation, which we borrow
            // mutably for the call; MADV_HUGEPAGE does not change the memory's contents
            // or ownership (see the module's contract).
            unsafe {
                libc::madvise(aligned_start as *mut libc::c_void, aligned_end - aligned_start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buffer;
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
}
