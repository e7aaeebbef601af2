//! Thread pools. All parallel work runs inside a pool sized by the user's `n_threads`
//! (0 = `OMP_NUM_THREADS` when set, else all cores), so that our threads do not oversubscribe
//! the machine together with BLAS, or with other worker processes: joblib's loky backend and
//! Dask's workers set `OMP_NUM_THREADS` to their share of the cores.
//! Pools are cached per process id: rayon's global pool does not survive `fork`, so a child
//! process (multiprocessing, joblib) builds its own on first use.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{MkError, Result};

type PoolMap = HashMap<(u32, usize, bool), Arc<rayon::ThreadPool>>;

fn pools() -> &'static Mutex<PoolMap> {
    static POOLS: OnceLock<Mutex<PoolMap>> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The fewest cores the thread rules assume: 1, except in tests. The private
/// `_core._set_min_cores_for_tests` lets the tests raise it to 2, so that a 1-against-2-thread identity test runs two worker threads
/// on a one-core runner too, instead of comparing a run with itself.
static MIN_CORES: AtomicUsize = AtomicUsize::new(1);

/// Sets `MIN_CORES` (the test hook `_core._set_min_cores_for_tests`).
pub fn set_min_cores(cores: usize) {
    MIN_CORES.store(cores.max(1), Ordering::Relaxed);
}

/// The cores this process may run on (its CPU affinity and quota), at least `MIN_CORES`.
pub fn available_cores() -> usize {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    cores.max(MIN_CORES.load(Ordering::Relaxed))
}

/// The user's `n_threads` (scikit-learn's `n_jobs`) as the engine's: a positive count is
/// clipped to the available cores (more threads never help the memory-bound loops, and the
/// results are bit-identical for any count); 0 and -1 mean all cores and give 0, which
/// [`resolve_threads`] reads when the work runs, in the process that runs it (joblib's and
/// Dask's workers set `OMP_NUM_THREADS` to their share); `-k` is all cores but `k − 1`.
pub fn requested_threads(n_threads: i64) -> Result<usize> {
    let cores = available_cores();
    if n_threads >= 0 {
        return Ok(usize::try_from(n_threads).unwrap_or(usize::MAX).min(cores));
    }
    let keep = i64::try_from(cores).unwrap_or(i64::MAX) + 1 + n_threads;
    if keep < 1 {
        return Err(MkError::config(
            "n_threads",
            format!(
                "{n_threads} leaves no thread on the {cores} available cores (-1 = all cores, \
                 -k = all but k - 1; 0 = all cores)"
            ),
        ));
    }
    let keep = keep as usize;
    Ok(if keep >= cores { 0 } else { keep })
}

/// The number of threads the engine's `n_threads` stands for when the work runs: itself if
/// positive; for 0, the positive integer in `OMP_NUM_THREADS` if there is one (the share of
/// the cores a process manager gave this process), else all available cores.
pub fn resolve_threads(n_threads: usize) -> usize {
    if n_threads > 0 {
        return n_threads;
    }
    let limit = std::env::var("OMP_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&t| t > 0);
    limit.unwrap_or_else(available_cores)
}

/// Runs `f` inside a rayon pool of `resolve_threads(n_threads)` threads, built once per process.
pub fn with_pool<R: Send>(n_threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    pool_run(false, n_threads, f)
}

/// [`with_pool`] in a pool of its own, which the engine's other calls never enter: for a
/// solver whose pool thread waits on Python for work that runs the engine in this process
/// (a fit on a Dask cluster of in-process workers, whose tasks call the engine). Sharing the
/// pool deadlocked where it had one thread (`OMP_NUM_THREADS=1`): the solver held it while
/// the tasks it waited for queued behind it.
pub fn with_own_pool<R: Send>(n_threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    pool_run(true, n_threads, f)
}

fn pool_run<R: Send>(apart: bool, n_threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    let threads = resolve_threads(n_threads);
    let key = (std::process::id(), threads, apart);
    let pool = {
        let mut map = pools().lock().unwrap_or_else(|e| e.into_inner());
        // A forked child inherits the parent's map but not its threads: forget (never drop,
        // which would signal threads that do not exist) the pools of other processes.
        let foreign: Vec<_> = map
            .keys()
            .filter(|(pid, _, _)| *pid != key.0)
            .copied()
            .collect();
        for k in foreign {
            if let Some(p) = map.remove(&k) {
                std::mem::forget(p);
            }
        }
        match map.get(&key) {
            Some(p) => Arc::clone(p),
            None => {
                let p = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("multikernel-{i}"))
                    .build()
                    .map_err(|e| MkError::config("n_threads", e.to_string()))?;
                let p = Arc::new(p);
                map.insert(key, Arc::clone(&p));
                p
            }
        }
    };
    Ok(pool.install(f))
}
