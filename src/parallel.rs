//! Thread pools. All parallel work runs inside a pool sized by the user's `n_threads`
//! (0 = `OMP_NUM_THREADS` when set, else all cores), so that our threads do not oversubscribe
//! the machine together with BLAS, or with other worker processes: joblib's loky backend and
//! Dask's workers set `OMP_NUM_THREADS` to their share of the cores.
//! Pools are cached per process id: rayon's global pool does not survive `fork`, so a child
//! process (multiprocessing, joblib) builds its own on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{MkError, Result};

type PoolMap = HashMap<(u32, usize), Arc<rayon::ThreadPool>>;

fn pools() -> &'static Mutex<PoolMap> {
    static POOLS: OnceLock<Mutex<PoolMap>> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The number of threads `n_threads` stands for: itself if positive; for 0, the positive
/// integer in `OMP_NUM_THREADS` if there is one (the share of the cores a process manager gave
/// this process), else all available cores.
pub fn resolve_threads(n_threads: usize) -> usize {
    if n_threads > 0 {
        return n_threads;
    }
    let limit = std::env::var("OMP_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&t| t > 0);
    limit.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// Runs `f` inside a rayon pool of `resolve_threads(n_threads)` threads, built once per process.
pub fn with_pool<R: Send>(n_threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    let threads = resolve_threads(n_threads);
    let key = (std::process::id(), threads);
    let pool = {
        let mut map = pools().lock().unwrap_or_else(|e| e.into_inner());
        // A forked child inherits the parent's map but not its threads: forget (never drop,
        // which would signal threads that do not exist) the pools of other processes.
        let foreign: Vec<_> = map
            .keys()
            .filter(|(pid, _)| *pid != key.0)
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
