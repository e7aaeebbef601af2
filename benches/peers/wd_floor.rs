//! The floor of a weighted-degree Gram matrix (benches/peers/sequence_kernels.py): one
//! byte-compare pass over the n(n+1)/2 pairs of equal-length sequences, i.e. counting the
//! equal bytes of every pair, rows dealt round-robin to `threads` threads. With AVX-512 (BW)
//! the compares take 64 bytes at a time straight into a bit mask (the tail by a masked
//! load); with AVX2, 32 bytes at a time with move-masks (the tail byte by byte); then
//! popcounts. The weighted-degree kernel does this compare and then its sums over the match
//! lengths; nothing can do less than the compare.
//!
//! Usage: wd_floor <file of n·L bytes> <n> <threads> [avx2]; prints the seconds of the pass
//! (the file read excluded), the total count (so the pass is not optimised away) and the
//! instruction set; `avx2` forces the AVX2 pass on an AVX-512 machine.

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
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
unsafe fn equal_bytes_avx512(x: &[u8], y: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm512_cmpeq_epi8_mask, _mm512_loadu_si512, _mm512_maskz_loadu_epi8};
    let len = x.len();
    let (mut k, mut c) = (0, 0u32);
    while k + 64 <= len {
        let a = _mm512_loadu_si512(x.as_ptr().add(k).cast());
        let b = _mm512_loadu_si512(y.as_ptr().add(k).cast());
        c += _mm512_cmpeq_epi8_mask(a, b).count_ones();
        k += 64;
    }
    if k < len {
        // The masked lanes are not read (no fault past the end).
        let m = (1u64 << (len - k)) - 1;
        let a = _mm512_maskz_loadu_epi8(m, x.as_ptr().add(k).cast());
        let b = _mm512_maskz_loadu_epi8(m, y.as_ptr().add(k).cast());
        c += (_mm512_cmpeq_epi8_mask(a, b) & m).count_ones();
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
unsafe fn pass_avx512(data: &[u8], n: usize, len: usize, first: usize, step: usize) -> u64 {
    let mut acc = 0u64;
    let mut i = first;
    while i < n {
        let x = &data[i * len..(i + 1) * len];
        for j in 0..=i {
            acc += equal_bytes_avx512(x, &data[j * len..(j + 1) * len]) as u64;
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
    let avx512 = args.get(4).map(String::as_str) != Some("avx2")
        && std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw");
    let len = data.len() / n;
    let start = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let d = &data;
                // SAFETY: AVX-512 checked above; the bench runs on AVX2 machines (checked
                // by the Python script).
                s.spawn(move || unsafe {
                    if avx512 {
                        pass_avx512(d, n, len, t, threads)
                    } else {
                        pass(d, n, len, t, threads)
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let isa = if avx512 { "avx512" } else { "avx2" };
    println!("{} {} {isa}", start.elapsed().as_secs_f64(), total);
}
