//! A small fork-join thread pool for the native CPU engine.
//!
//! Decode runs a few hundred parallel matvecs per token, each only tens of
//! microseconds long, so the fork/join cost dominates a general-purpose
//! pool's. Workers here spin briefly between jobs before sleeping, and
//! tasks are claimed from a counter tagged with the job's generation so a
//! worker that wakes late can never run a task of a job that has finished.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::cpu::Parallel;

/// Raw pointer to the caller's closure; valid while the owning `run` waits.
#[derive(Clone, Copy)]
struct JobPtr(*const (dyn Fn(usize) + Sync));
// SAFETY: the closure is Sync and outlives every call made through the pointer
// (see `run`: it returns only after all claimed tasks completed).
unsafe impl Send for JobPtr {}

struct Shared {
    /// (generation << 32) | next task index.
    next: AtomicU64,
    done: AtomicUsize,
    /// Job pointer, task count and generation; written under this lock.
    job: Mutex<(Option<JobPtr>, usize, u64, bool)>,
    wake: Condvar,
    sleepers: AtomicUsize,
}

pub struct ThreadPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    generation: std::cell::Cell<u64>,
    run_lock: Mutex<()>,
}

// SAFETY: `generation` is only touched while `run_lock` is held.
unsafe impl Sync for ThreadPool {}

const SPIN_ITERS: u32 = 20_000;

impl ThreadPool {
    /// A pool using `threads` threads in total (the caller's thread included).
    pub fn new(threads: usize) -> ThreadPool {
        let shared = Arc::new(Shared {
            next: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            job: Mutex::new((None, 0, 0, false)),
            wake: Condvar::new(),
            sleepers: AtomicUsize::new(0),
        });
        let workers = (1..threads.max(1))
            .map(|_| {
                let s = shared.clone();
                std::thread::spawn(move || worker(&s))
            })
            .collect();
        ThreadPool {
            shared,
            workers,
            generation: std::cell::Cell::new(0),
            run_lock: Mutex::new(()),
        }
    }

    /// Threads available on this machine.
    pub fn available() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Claim the next task of generation `gen`, or `None` once that job is drained.
fn claim(s: &Shared, gen: u64, n: usize) -> Option<usize> {
    let mut v = s.next.load(Ordering::Acquire);
    loop {
        let idx = (v & 0xffff_ffff) as usize;
        if v >> 32 != gen || idx >= n {
            return None;
        }
        match s
            .next
            .compare_exchange_weak(v, v + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return Some(idx),
            Err(cur) => v = cur,
        }
    }
}

fn worker(s: &Shared) {
    let mut seen = 0u64;
    loop {
        let mut spins = 0;
        while s.next.load(Ordering::Acquire) >> 32 == seen && spins < SPIN_ITERS {
            std::hint::spin_loop();
            spins += 1;
        }
        let (job, n, gen) = {
            let mut g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            while g.2 == seen && !g.3 {
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
                s.sleepers.fetch_sub(1, Ordering::SeqCst);
            }
            if g.3 {
                return;
            }
            (g.0, g.1, g.2)
        };
        seen = gen;
        let Some(job) = job else { continue };
        while let Some(i) = claim(s, gen, n) {
            // SAFETY: a successful claim means `run` for this generation is
            // still waiting for `done` to reach `n`, so the closure is alive.
            unsafe { (*job.0)(i) };
            s.done.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Parallel for ThreadPool {
    fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    fn for_each(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        if n == 0 {
            return;
        }
        if self.workers.is_empty() || n == 1 {
            (0..n).for_each(f);
            return;
        }
        let _guard = self.run_lock.lock().unwrap_or_else(|e| e.into_inner());
        let gen = (self.generation.get() + 1) & 0xffff_ffff;
        let gen = if gen == 0 { 1 } else { gen };
        self.generation.set(gen);
        let s = &*self.shared;
        // SAFETY: erase the closure's lifetime; we do not return before every
        // claimed task of this generation has finished.
        let ptr: *const (dyn Fn(usize) + Sync + '_) = f;
        let ptr: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(ptr) };
        s.done.store(0, Ordering::Release);
        {
            let mut g = s.job.lock().unwrap_or_else(|e| e.into_inner());
            *g = (Some(JobPtr(ptr)), n, gen, false);
            s.next.store(gen << 32, Ordering::Release);
        }
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            s.wake.notify_all();
        }
        while let Some(i) = claim(s, gen, n) {
            f(i);
            s.done.fetch_add(1, Ordering::AcqRel);
        }
        while s.done.load(Ordering::Acquire) < n {
            std::hint::spin_loop();
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        {
            let mut g = self.shared.job.lock().unwrap_or_else(|e| e.into_inner());
            g.3 = true;
            g.0 = None;
        }
        self.shared.wake.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_task_runs_exactly_once() {
        let pool = ThreadPool::new(3);
        for round in 0..2000 {
            let n = 1 + round % 37;
            let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
            pool.for_each(n, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
    }
}
