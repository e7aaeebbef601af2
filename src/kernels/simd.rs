//! Run-time AVX2 dispatch and prefetching for the memory-bound loops over kernel stacks.
//!
//! Wheels target baseline x86-64, where these loops are compute-bound rather than
//! memory-bound; each loop is therefore also compiled for AVX2 + FMA and chosen at run time.

/// Whether the CPU runs the AVX2 + FMA variants (with POPCNT, which every AVX2 CPU has) (detected once, then a cached load). Setting
/// `MULTIKERNEL_NO_AVX2` in the environment forces the baseline build, as on a CPU without
/// AVX2: the tests and `.ci/run` check that a wheel computes the same there.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn avx2_fma() -> bool {
    static USE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USE.get_or_init(|| {
        std::env::var_os("MULTIKERNEL_NO_AVX2").is_none()
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("popcnt")
    })
}

/// Hints the first cache lines of `s` into cache (no effect off x86-64): the start of a row
/// segment that begins mid-row, where the hardware prefetcher has lost the stream.
#[inline(always)]
pub(crate) fn prefetch<T>(s: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(s);
        let base = s.as_ptr() as *const i8;
        let mut off = 0;
        while off < bytes.min(512) {
            // SAFETY: prefetching is a hint and never faults; the address lies inside `s`.
            unsafe { _mm_prefetch(base.add(off), _MM_HINT_T0) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = s;
}

/// `fn $name<T: Element>(args) -> ret` that calls the `#[inline(always)]` function `$body`
/// compiled for AVX2 + FMA when the CPU has them, and the baseline build otherwise.
macro_rules! avx2_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident<$t:ident>($($arg:ident: $ty:ty),* $(,)?)
        $(-> $ret:ty)? = $body:ident;) => {
        $(#[$meta])*
        #[inline]
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$t: $crate::kernels::Element>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma,popcnt")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx2<$t: $crate::kernels::Element>($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if $crate::kernels::simd::avx2_fma() {
                    // SAFETY: the CPU supports the features `avx2` was compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use avx2_dispatch;
