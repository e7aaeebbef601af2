//! The floor of a weighted-degree Gram matrix (benches/peers/sequence_kernels.py): one
//! byte-compare pass over the n(n+1)/2 pairs of equal-length sequences, i.e. counting the
//! equal bytes of every pair with AVX2 compares, move-masks and popcounts (32 bytes at a
//! time), rows dealt round-robin to `threads` threads. The weighted-degree kernel does this
//! compare and then its sums over the match lengths; nothing can do less than the compare.
//!
//! Usage: wd_floor <file of n·L bytes> <n> <threads>; prints the seconds of the pass (the
//! file read excluded) and the total count (so the pass is not optimised away).

use std::time::Instant;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn equal_bytes(x: &[u8], y: &[u8]) -> u32 {
    use std::arch::x86_64::{__m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8};
    let len = x.len();
    let (mut k, mut c) = (0, 0u32);
    while k + 32 <= len {
        let a = _mm256_loadu_si256(x.as_ptr().add(k) as *const __m256i);
        let b = _mm256_loadu_si256(y.as_ptr().add(k) as *const __m256i);
        c += (_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)) as u32).count_ones();
        k += 32;
    }
    for t in k..len {
        c += (x[t] == y[t]) as u32;
    }
    c
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn pass(data: &[u8], n: usize, len: usize, first: usize, step: usize) -> u64 {
    let mut acc = 0u64;
    let mut i = first;
    while i < n {
        let x = &data[i * len..(i + 1) * len];
        for j in 0..=i {
            acc += equal_bytes(x, &data[j * len..(j + 1) * len]) as u64;
        }
        i += step;
    }
    acc
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("the sequences' file");
    let n: usize = args[2].parse().expect("n");
    let threads: usize = args[3].parse().expect("threads");
    let len = data.len() / n;
    let start = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let d = &data;
                // SAFETY: the bench runs on AVX2 machines (checked by the Python script).
                s.spawn(move || unsafe { pass(d, n, len, t, threads) })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    println!("{} {}", start.elapsed().as_secs_f64(), total);
}
