//! Barrier diagnostics: what a thread waiting at a barrier says when the team's threads
//! met different barriers (a non-conforming program: "each barrier region must be
//! encountered by all threads in a team or by none at all"), or, when asked, when it has
//! waited long.
//!
//! **Owns**: the per-team record of which threads sleep at which barrier ([`Waits`]), the
//! diagnosis and its messages. **Does not own**: the barrier itself (team.rs), which calls
//! [`Waits::tick`] only from its sleeping path (or, under the active wait policy, after a
//! long spin): a thread that arrives, or that is released while it spins, never reaches
//! this module (nothing is added to the barrier's arrival).
//!
//! Two checks, each made before a barrier waiter sleeps and again each time its sleep
//! times out (1 ms, doubling up to 1 s while a waiter sleeps on):
//! - A mismatch, certain: the waiter's barrier has not completed although a thread of its
//!   team has passed the region's last barrier (a member counted itself out of the team, or
//!   the primary is joining). No thread can arrive any more, so the program would hang (as
//!   it does under libgomp, silently): the waiter says which threads are where and aborts.
//!   Only a program whose threads met different barriers gets there (a barrier only some
//!   threads reach pairs with the others' end-of-region barrier, and they leave).
//! - A long wait (`WEFT_OMP_BARRIER_REPORT=seconds`, off by default): once per region, the
//!   first waiter past that time says where the team's threads are, and goes on waiting. A
//!   conforming program may keep threads at a barrier for any time (a long `single`, I/O on
//!   one thread), so this is a debugging aid asked for, not a default: a default would
//!   print on such programs' stderr.
//!
//! Under `OMP_WAIT_POLICY=active` waiters never sleep: a barrier waiter makes the same
//! checks every 2^20 looks of its spin (a few milliseconds) instead.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

/// Where a sleeping waiter is ([`Waits::at`]).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Site {
    /// Not asleep at a barrier of this team.
    None = 0,
    /// A barrier: `omp barrier`, or the end of a worksharing construct or `single`.
    Barrier = 1,
    /// The end of the parallel region: the primary's join (members have no barrier there:
    /// they dock once their body returned and no task is pending; team.rs).
    End = 2,
    /// A cancellable barrier (`GOMP_barrier_cancel`, kmp's `cancel_barrier`).
    Cancellable = 3,
}

/// Per team: which threads sleep at which barrier, whether every member has its assignment,
/// whether the long-wait report was printed.
#[derive(Default)]
pub struct Waits {
    at: Vec<AtomicU8>,
    /// Set by the primary once every member has its assignment (fork): until then a
    /// member's slot may still be docked from the team's previous region. (On a line of its
    /// own: a store to a line the members read would take it from them.)
    pub members_told: CachePadded<AtomicBool>,
    reported: AtomicBool,
}

/// A waiter's record for [`Waits::slept`]: none before its first sleep, then since when
/// it counts the time slept (none until the end of that sleep).
pub type Asleep = std::cell::Cell<Option<Option<std::time::Instant>>>;

/// What the diagnosis knows of one thread of the team.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum State {
    At(u8),
    /// Has passed the region's last barrier.
    Left,
    /// Has not started its share of the region yet.
    NotStarted,
    /// Running: in the region's code or a task, or waiting elsewhere (a lock, a taskwait,
    /// an ordered turn), or spinning at a barrier.
    Running,
}

impl Waits {
    /// Room for `n` threads (only while no thread uses the team).
    pub fn reset(&mut self, n: u32) {
        while self.at.len() < n as usize {
            self.at.push(AtomicU8::new(0));
        }
        // (Each written only if it changes: the members read the lines around them.)
        for a in &mut self.at[..n as usize] {
            if *a.get_mut() != 0 {
                *a.get_mut() = 0;
            }
        }
        *self.members_told.get_mut() = false;
        if *self.reported.get_mut() {
            *self.reported.get_mut() = false;
        }
    }

    /// How long thread `tid` has slept at `site` so far, by `asleep` (the waiter's own
    /// record: whether it has slept there, and since when it counts). The first call records
    /// the site; the clock starts at the second, at the end of the first sleep (the clock is
    /// not read before it, which most sleeps end without), so the time leaves that one out.
    pub fn slept(&self, tid: u32, site: Site, asleep: &Asleep) -> Duration {
        match asleep.get() {
            Some(Some(t)) => t.elapsed(),
            Some(None) => {
                asleep.set(Some(Some(std::time::Instant::now())));
                Duration::ZERO
            }
            None => {
                self.set(tid, site);
                asleep.set(Some(None));
                Duration::ZERO
            }
        }
    }

    /// Thread `tid` sleeps at `site` (or no longer does: [`Site::None`]).
    pub fn set(&self, tid: u32, site: Site) {
        if let Some(a) = self.at.get(tid as usize) {
            // Release: read by the diagnosis (`primary_at_end` relies on it; the rest is a
            // snapshot anyway).
            a.store(site as u8, Ordering::Release);
        }
    }

    /// Whether the primary sleeps at the region's end (its join): past every barrier. (Acquire,
    /// with `set`'s Release: every barrier it left has completed, as its waiters then see.)
    pub fn primary_at_end(&self) -> bool {
        self.at(0) == Site::End as u8
    }

    fn at(&self, tid: u32) -> u8 {
        self.at.get(tid as usize).map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// Called by thread `tid`, asleep at `site` for `slept` so far, whose barrier has not
    /// completed: `gone` says whether the caller's wait can no longer end (a thread it waits
    /// for is past every barrier of the region, or waits at one the caller will not reach:
    /// see team.rs), `state(t)`
    /// where thread `t` is as far as the team knows (left, not started, or running).
    pub fn tick(&self, tid: u32, n: u32, site: Site, slept: Duration, gone: bool, state: &dyn Fn(u32) -> State) {
        if gone {
            let where_ = self.describe(n, state);
            eprintln!(
                "weft-omp: thread {tid} of a team of {n} waits at {}, a barrier the other threads can no longer reach ({where_}): \
                 the team's threads met different barriers (a barrier, or a construct ending in one, that not every \
                 thread reaches); aborting instead of hanging",
                site_name(site as u8)
            );
            std::process::abort();
        }
        if let Some(limit) = crate::env::env().barrier_report
            && slept >= limit
            && !self.reported.swap(true, Ordering::Relaxed)
        {
            let where_ = self.describe(n, state);
            eprintln!(
                "weft-omp: thread {tid} of a team of {n} has waited {:.1} s at {} ({where_}); \
                 WEFT_OMP_BARRIER_REPORT={} asked for this report, once per region",
                slept.as_secs_f64(),
                site_name(site as u8),
                limit.as_secs_f64()
            );
        }
    }

    /// "thread 0 at a barrier; thread 1 has left the parallel region; ...".
    fn describe(&self, n: u32, state: &dyn Fn(u32) -> State) -> String {
        (0..n)
            .map(|t| {
                let s = match self.at(t) {
                    0 => state(t),
                    a => State::At(a),
                };
                match s {
                    State::At(a) => format!("thread {t} at {}", site_name(a)),
                    State::Left => format!("thread {t} has left the parallel region"),
                    State::NotStarted => format!("thread {t} has not started its share"),
                    State::Running => format!("thread {t} is not asleep at a barrier: running, or waiting elsewhere"),
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn site_name(a: u8) -> &'static str {
    match a {
        1 => "a barrier",
        2 => "the end of the parallel region",
        3 => "a cancellable barrier",
        _ => "no barrier",
    }
}

/// How long a sleeping barrier waiter sleeps before it looks again: 1 ms, doubling to 1 s.
pub fn next_slice(d: Duration) -> Duration {
    (d * 2).min(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_prefers_the_recorded_site() {
        let mut w = Waits::default();
        w.reset(3);
        w.set(0, Site::End);
        let s = w.describe(3, &|t| if t == 1 { State::Left } else { State::Running });
        assert_eq!(
            s,
            "thread 0 at the end of the parallel region; thread 1 has left the parallel region; \
             thread 2 is not asleep at a barrier: running, or waiting elsewhere"
        );
        w.set(0, Site::None);
        assert_eq!(w.at(0), 0);
    }

    #[test]
    fn slices_double_up_to_a_second() {
        let mut d = Duration::from_millis(1);
        for _ in 0..20 {
            d = next_slice(d);
        }
        assert_eq!(d, Duration::from_secs(1));
        assert_eq!(next_slice(Duration::from_millis(1)), Duration::from_millis(2));
    }
}
