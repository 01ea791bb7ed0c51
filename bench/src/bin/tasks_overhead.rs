//! `tasks_overhead`: Weft's port of StarPU 1.3's `tests/microbenchs/tasks_overhead.c`
//! (installed by Debian's `starpu-examples` as
//! `/usr/lib/x86_64-linux-gnu/starpu/examples/tasks_overhead`), with the same options and
//! the same output lines on stderr, so that `bench/run_tasks_overhead.sh` can put the two
//! side by side.
//!
//! **Owns**: the task graphs below, their timing and the report.
//! **Does not own**: anything in the runtime; it only uses `weft_core`'s public API.
//!
//! Modes (`-m`; the default, `tags`, is StarPU's program):
//!
//! * `tags` — `ntasks` empty CPU tasks, task `i` carrying tag `i`, all built before the
//!   clock starts. With `-b 0`: task `i` (`i >= 1`) waits on tag `i-1`; tasks `1..n` are
//!   submitted, then task 0, which releases the chain. With `-b B > 0`: every task accesses
//!   `B` vectors of 16 floats in RW and the tasks are submitted in order, so the chain runs
//!   through data (StarPU 1.3.10 does exactly this for `-b`).
//! * `chain` — a chain through data only: every task accesses the same `B` vectors (at
//!   least 1) in RW; no tags. Submitted in order, so the chain runs while it is submitted.
//! * `chain-deps` — the same chain through explicit task dependencies (`after`).
//! * `fanout` — fan-out/fan-in through data: one root writes the vectors (RW), `ntasks - 2`
//!   tasks read them (R) and may all run at once, one sink writes them (RW) after all of
//!   them. The root waits on a gate tag that is notified after the last submission, so
//!   the middle tasks really wait for the root and are all released by its completion.
//! * `fanout-deps` — the same graph through explicit task dependencies (no data).
//! * `independent` — `ntasks` tasks with no dependency at all (the best case for
//!   submission plus execution throughput); execution ends with `wait_for_all`.
//!
//! `-g` holds the first task of `chain` and `chain-deps` behind the gate tag as well,
//! which separates submission from execution as `tags -b 0` does.
//!
//! The clock covers submitting (including the gate's notification) and then waiting for
//! the last task, exactly as in StarPU's program; building the task descriptions, like
//! StarPU's `starpu_task_init` loop, is outside it. Like StarPU's program (which sets
//! `conf.ncpus = 2`), it runs 2 CPU workers unless `WEFT_NCPU` says otherwise;
//! `WEFT_SCHED` or `-p` picks the policy.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use weft_core::{AccessMode, Codelet, Config, DataHandle, PolicyKind, Runtime, Tag, TaskBuilder, TaskHandle};

/// The tag the gated modes hold their first task behind (far from the tasks' own tags).
const GATE: Tag = u64::MAX - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Tags,
    Chain,
    ChainDeps,
    Fanout,
    FanoutDeps,
    Independent,
}

impl Mode {
    const ALL: [(&'static str, Mode); 6] = [
        ("tags", Mode::Tags),
        ("chain", Mode::Chain),
        ("chain-deps", Mode::ChainDeps),
        ("fanout", Mode::Fanout),
        ("fanout-deps", Mode::FanoutDeps),
        ("independent", Mode::Independent),
    ];
    fn name(self) -> &'static str {
        Mode::ALL.iter().find(|(_, m)| *m == self).map(|(n, _)| *n).expect("invariant: every mode is listed")
    }
}

struct Opts {
    ntasks: usize,
    nbuffers: usize,
    mode: Mode,
    sched: Option<PolicyKind>,
    /// The first task waits on `GATE`, notified after the last submission.
    gate: bool,
}

fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [-i ntasks] [-p sched_policy] [-b nbuffers] [-m mode] [-g] [-h]\n\
         \x20 -i ntasks    number of tasks (default 65536)\n\
         \x20 -p policy    eager, prio, random, ws or lws (default: WEFT_SCHED, else lws)\n\
         \x20 -b nbuffers  vectors of 16 floats every task accesses, 0..8 (default 0; 1 for\n\
         \x20              chain and fanout)\n\
         \x20 -m mode      tags (StarPU's program, default), chain, chain-deps, fanout,\n\
         \x20              fanout-deps, independent\n\
         \x20 -g           hold the first task until everything is submitted (chain and\n\
         \x20              chain-deps; fanout always does)\n\
         Workers: 2 CPU workers as in StarPU's program, unless WEFT_NCPU is set."
    )
}

fn parse_args(args: &[String]) -> Result<Opts, String> {
    let prog = args.first().map_or("tasks_overhead", String::as_str);
    let mut o = Opts { ntasks: 65536, nbuffers: 0, mode: Mode::Tags, sched: None, gate: false };
    let mut nbuffers = None;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let Some(flag) = a.strip_prefix('-').and_then(|f| f.chars().next()) else {
            return Err(format!("unexpected argument {a:?}\n{}", usage(prog)));
        };
        let attached = &a[1 + flag.len_utf8()..];
        let mut value = |name: &str| -> Result<String, String> {
            if !attached.is_empty() {
                Ok(attached.to_string())
            } else {
                it.next().cloned().ok_or_else(|| format!("-{flag} needs {name}\n{}", usage(prog)))
            }
        };
        match flag {
            'i' => {
                let v = value("a number of tasks")?;
                o.ntasks = v.parse().map_err(|_| format!("-i {v:?}: not a number of tasks"))?;
            }
            'b' => {
                let v = value("a number of buffers")?;
                let b: usize = v.parse().map_err(|_| format!("-b {v:?}: not a number of buffers"))?;
                if b > 8 {
                    return Err(format!("-b {b}: at most 8 buffers"));
                }
                nbuffers = Some(b);
            }
            'p' => {
                let v = value("a policy")?;
                o.sched = Some(v.parse().map_err(|e| format!("-p: {e}"))?);
            }
            'm' => {
                let v = value("a mode")?;
                o.mode = Mode::ALL
                    .iter()
                    .find(|(n, _)| *n == v)
                    .map(|(_, m)| *m)
                    .ok_or_else(|| format!("-m {v:?}: unknown mode\n{}", usage(prog)))?;
            }
            'g' => o.gate = true,
            'h' => return Err(usage(prog)),
            _ => return Err(format!("unknown option {a:?}\n{}", usage(prog))),
        }
    }
    let data_mode = matches!(o.mode, Mode::Chain | Mode::Fanout);
    o.nbuffers = match nbuffers {
        Some(0) if data_mode => {
            return Err(format!("-m {} needs at least one buffer (use {}-deps for no data)", o.mode.name(), o.mode.name()));
        }
        Some(b) if matches!(o.mode, Mode::ChainDeps | Mode::FanoutDeps) && b > 0 => {
            return Err(format!("-m {} takes no buffers", o.mode.name()));
        }
        Some(b) => b,
        None if data_mode => 1,
        None => 0,
    };
    if o.gate && !matches!(o.mode, Mode::Chain | Mode::ChainDeps) {
        return Err(format!("-g applies to chain and chain-deps, not {}", o.mode.name()));
    }
    o.gate |= matches!(o.mode, Mode::Fanout | Mode::FanoutDeps);
    let min = match o.mode {
        Mode::Fanout | Mode::FanoutDeps => 3,
        _ => 1,
    };
    if o.ntasks < min {
        return Err(format!("-i {}: mode {} needs at least {min} tasks", o.ntasks, o.mode.name()));
    }
    Ok(o)
}

/// The task descriptions, built before the clock starts (StarPU's `starpu_task_init` loop).
struct Plan {
    /// Submitted in this order.
    builders: Vec<TaskBuilder>,
    /// Submit tasks `1..` before task 0 (`tags -b 0`).
    first_last: bool,
}

fn task(cl: &Arc<Codelet>, handles: &[DataHandle], mode: AccessMode) -> TaskBuilder {
    handles.iter().fold(TaskBuilder::new(cl), |b, h| b.access(h, mode))
}

fn plan(o: &Opts, cl: &Arc<Codelet>, handles: &[DataHandle]) -> Plan {
    let n = o.ntasks;
    let mut builders = Vec::with_capacity(n);
    let mut first_last = false;
    match o.mode {
        Mode::Tags => {
            for i in 0..n {
                let mut b = task(cl, handles, AccessMode::RW).tag(i as Tag);
                if handles.is_empty() && i > 0 {
                    b = b.after_tag(i as Tag - 1);
                }
                builders.push(b);
            }
            first_last = handles.is_empty();
        }
        Mode::Chain | Mode::Independent => {
            builders.extend((0..n).map(|_| task(cl, handles, AccessMode::RW)));
        }
        Mode::Fanout => {
            builders.push(task(cl, handles, AccessMode::RW));
            builders.extend((2..n).map(|_| task(cl, handles, AccessMode::R)));
            builders.push(task(cl, handles, AccessMode::RW));
        }
        // Explicit dependencies need the predecessors' handles: built while submitting.
        Mode::ChainDeps | Mode::FanoutDeps => {}
    }
    Plan { builders, first_last }
}

/// Submit everything; returns the task to wait for (None: wait for all).
fn submit_all(rt: &Runtime, o: &Opts, cl: &Arc<Codelet>, plan: Plan) -> weft_core::Result<Option<TaskHandle>> {
    let gate = |b: TaskBuilder| if o.gate { b.after_tag(GATE) } else { b };
    let mut last = None;
    match o.mode {
        Mode::Tags => {
            let mut it = plan.builders.into_iter();
            if plan.first_last {
                let first = it.next().expect("invariant: ntasks >= 1");
                for b in it {
                    last = Some(rt.submit(b)?);
                }
                let h = rt.submit(first)?;
                last.get_or_insert(h);
            } else {
                for b in it {
                    last = Some(rt.submit(b)?);
                }
            }
        }
        Mode::Chain => {
            for (i, b) in plan.builders.into_iter().enumerate() {
                last = Some(rt.submit(if i == 0 { gate(b) } else { b })?);
            }
        }
        Mode::Independent => {
            for b in plan.builders {
                rt.submit(b)?;
            }
        }
        Mode::ChainDeps => {
            let mut prev = rt.submit(gate(TaskBuilder::new(cl)))?;
            for _ in 1..o.ntasks {
                prev = rt.submit(TaskBuilder::new(cl).after(&prev))?;
            }
            last = Some(prev);
        }
        Mode::Fanout => {
            let mut it = plan.builders.into_iter();
            let root = it.next().expect("invariant: ntasks >= 3");
            rt.submit(gate(root))?;
            for b in it {
                last = Some(rt.submit(b)?);
            }
        }
        Mode::FanoutDeps => {
            let root = rt.submit(gate(TaskBuilder::new(cl)))?;
            let mut sink = TaskBuilder::new(cl);
            for _ in 2..o.ntasks {
                let t = rt.submit(TaskBuilder::new(cl).after(&root))?;
                sink = sink.after(&t);
            }
            last = Some(rt.submit(sink)?);
        }
    }
    if o.gate {
        rt.tag_notify(GATE)?;
    }
    Ok(last)
}

fn run(o: &Opts) -> Result<(), String> {
    let err = |e: weft_core::Error| e.to_string();
    let mut config = Config::from_env().map_err(err)?;
    if std::env::var_os("WEFT_NCPU").is_none() {
        config.ncpu = Some(2);
    }
    if let Some(s) = o.sched {
        config.sched = s;
    }
    let rt = Runtime::new(config).map_err(err)?;
    let handles = (0..o.nbuffers).map(|_| rt.register_vector(vec![0f32; 16])).collect::<weft_core::Result<Vec<_>>>().map_err(err)?;
    let cl = Codelet::builder("dummy").cpu(|_| Ok(())).nbuffers(o.nbuffers).build();

    eprintln!("#tasks : {}\n#buffers : {}", o.ntasks, o.nbuffers);
    eprintln!(
        "#mode : {}{}\n#sched : {}\n#workers : {}",
        o.mode.name(),
        if o.gate { " (gated)" } else { "" },
        rt.policy_name(),
        rt.workers().len()
    );

    let plan = plan(o, &cl, &handles);
    let start_submit = Instant::now();
    let last = submit_all(&rt, o, &cl, plan).map_err(err)?;
    let end_submit = Instant::now();
    match &last {
        Some(t) => t.wait(),
        None => rt.wait_for_all(),
    }
    .map_err(err)?;
    let end_exec = Instant::now();
    rt.wait_for_all().map_err(err)?;
    drop(last);
    // Every task ran once: a benchmark that skipped work would measure nothing.
    let ran = rt.tasks_per_worker();
    if ran.iter().sum::<u64>() != o.ntasks as u64 {
        return Err(format!("{} tasks submitted but {ran:?} ran", o.ntasks));
    }

    let n = o.ntasks as f64;
    let submit = (end_submit - start_submit).as_secs_f64() * 1e6;
    let exec = (end_exec - end_submit).as_secs_f64() * 1e6;
    eprintln!("Total submit: {:.6} secs", submit / 1e6);
    eprintln!("Per task submit: {:.6} usecs", submit / n);
    eprintln!();
    eprintln!("Total execution: {:.6} secs", exec / 1e6);
    eprintln!("Per task execution: {:.6} usecs", exec / n);
    eprintln!();
    eprintln!("Total: {:.6} secs", (submit + exec) / 1e6);
    eprintln!("Per task: {:.6} usecs", (submit + exec) / n);
    eprintln!("#tasks per worker : {ran:?}");
    for h in handles {
        h.unregister().map_err(err)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let r = parse_args(&args).and_then(|o| run(&o));
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
