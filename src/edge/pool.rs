//! The threads attempts run on, kept between attempts.
//!
//! An attempt runs on a thread of its own so that its caller can stop
//! waiting for it at once (a signal, the head's deadline) whatever it is
//! doing. Starting a thread per attempt cost a batch more than the request
//! itself: on loopback, the thread's start and its stack's mapping and
//! unmapping were a third of the CPU time of a small GET. So a thread that
//! finished an attempt waits for the next one for a while before it ends,
//! and a new thread starts only when every kept one is busy (an abandoned
//! attempt keeps its thread until it ends on its own).

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// How long an idle thread waits for another attempt before it ends.
const IDLE: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job that no job has been promised to.
    idle: usize,
}

/// A handle to the kept threads; clones share them.
#[derive(Clone, Default)]
pub struct Pool {
    shared: Arc<(Mutex<Queue>, Condvar)>,
}

impl Pool {
    /// Runs `job` on an idle kept thread, or on a new one when none is idle.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) -> io::Result<()> {
        let (queue, ready) = &*self.shared;
        let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
        if q.idle > 0 {
            q.idle -= 1;
            q.jobs.push_back(Box::new(job));
            ready.notify_one();
            return Ok(());
        }
        drop(q);
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name("abide-attempt".into())
            .spawn(move || {
                job();
                keep_serving(&shared);
            })
            .map(drop)
    }
}

/// Runs the jobs given to this thread until none comes for [`IDLE`].
fn keep_serving(shared: &(Mutex<Queue>, Condvar)) {
    let (queue, ready) = shared;
    let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        q.idle += 1;
        loop {
            if let Some(job) = q.jobs.pop_front() {
                // Its submitter counted this thread out of `idle`.
                drop(q);
                job();
                q = queue.lock().unwrap_or_else(PoisonError::into_inner);
                break;
            }
            let (next, waited) = ready
                .wait_timeout(q, IDLE)
                .unwrap_or_else(PoisonError::into_inner);
            q = next;
            if waited.timed_out() && q.jobs.is_empty() {
                q.idle -= 1;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn thread_id(pool: &Pool) -> std::thread::ThreadId {
        let (tx, rx) = mpsc::channel();
        pool.run(move || tx.send(std::thread::current().id()).unwrap())
            .unwrap();
        rx.recv().unwrap()
    }

    #[test]
    fn a_finished_thread_runs_the_next_job() {
        let pool = Pool::default();
        let first = thread_id(&pool);
        // The thread counts itself idle just after its job; wait for that.
        while pool.shared.0.lock().unwrap().idle == 0 {
            std::thread::yield_now();
        }
        assert_eq!(thread_id(&pool), first);
    }

    #[test]
    fn a_busy_thread_does_not_hold_back_the_next_job() {
        let pool = Pool::default();
        let (release, held) = mpsc::channel::<()>();
        pool.run(move || held.recv().unwrap()).unwrap();
        // The first job never ends until released: the second needs a
        // thread of its own, and gets one.
        let (tx, rx) = mpsc::channel();
        pool.run(move || tx.send(()).unwrap()).unwrap();
        rx.recv().unwrap();
        release.send(()).unwrap();
    }

    #[test]
    fn many_jobs_from_many_threads_all_run() {
        let pool = Pool::default();
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (pool, tx) = (pool.clone(), tx.clone());
                s.spawn(move || {
                    for n in 0..50 {
                        let tx = tx.clone();
                        pool.run(move || tx.send(n).unwrap()).unwrap();
                    }
                });
            }
        });
        drop(tx);
        assert_eq!(rx.iter().count(), 200);
    }
}
