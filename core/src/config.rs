//! Every environment variable Weft reads is parsed here, once.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `WEFT_NCPU` | number of CPU workers | one per core, minus one per device driver |
//! | `WEFT_SCHED` | scheduling policy: eager, prio, random, ws, lws, dm, dmda, dmdas, heteroprio (`heft`: dmda) | `dmdas` where workers are of more than one kind, else `lws` |
//! | `WEFT_SCHED_ALPHA`, `WEFT_SCHED_BETA` | weights of expected compute time and transfer time in dm-family placement | 1, 1 |
//! | `WEFT_SCHED_LOCALITY` | `dmda`/`dmdas`: scores within this many task durations of the best count as equal, and the worker moving the fewest bytes wins | 3 |
//! | `WEFT_HETEROPRIO` | `heteroprio`'s bucket orders, e.g. `cpu=2,1,0;opencl=0,1,2`: buckets are task priorities, each architecture listed takes them in that order | automatic (a bucket per codelet, ordered by the models) |
//! | `WEFT_CALIBRATE` | performance models: `0` use them (measure uncalibrated entries only), `1` keep measuring, `2` discard and start over | 0 |
//! | `WEFT_BUS_CALIBRATE` | `1`: measure the bus model again instead of reading it from `$WEFT_HOME/bus` | 0 |
//! | `WEFT_PERF_MODEL_HOMOGENEOUS_CPU` | `0`: each CPU worker has its own entries in the performance models (StarPU's variable of that name), for cores that do not run at one speed; each then calibrates on its own | 1 |
//! | `WEFT_OPENCL_ON_CPUS` | `1`: OpenCL devices of type CPU also run codelets that have a CPU implementation (they share the CPU workers' cores) | 0 |
//! | `WEFT_NULL_SLOWDOWN` | null devices run their tasks this many times slower (tests of model-driven placement) | 1 |
//! | `WEFT_NOPENCL` | OpenCL devices to use (each a memory node with a driver worker) | all |
//! | `WEFT_LIMIT_OPENCL_MEM` | memory limit of each OpenCL device, MiB | none |
//! | `WEFT_NCUDA` | CUDA GPUs to use (each a memory node with a driver worker) | all |
//! | `WEFT_LIMIT_CUDA_MEM` | memory limit of each CUDA GPU, MiB | 15/16 of the GPU's memory |
//! | `WEFT_HOME` | where built kernels (`$WEFT_HOME/kernels`), performance models (`models`) and the bus model (`bus`) are kept; directories created 0700, and anything another user owns or could write ignored (`weft_vendors::fsutil`) | `~/.cache/weft` |
//! | `WEFT_NNULL` | simulated (null) devices, each a memory node with a driver worker | 0 |
//! | `WEFT_LIMIT_NULL_MEM` | memory limit of each null device, MiB | none |
//! | `WEFT_LIMIT_CPU_MEM` | limit on runtime allocations in host memory, MiB | none |
//! | `WEFT_BIND` | bind CPU workers to cores (0/1) | 1 |
//! | `WEFT_SPIN_US` | how long an idle worker spins before it sleeps, µs | 50 |
//! | `WEFT_WAIT_SPIN_US` | how long a GPU's driver with work in flight, and a wait for a task that may run on a GPU, spin before they sleep, µs | 1000 |
//! | `WEFT_BACK_TO_BACK_US` | an in-order task expected to run this long or longer on a device makes its in-order successors wait for its completion instead of following it on that device's queue; `0`: always wait (and a task without a calibrated prediction counts as short otherwise) | 1000 |
//! | `WEFT_STATS` | print per-worker totals at shutdown (0/1) | 0 |
//! | `WEFT_TRACE` | record an execution trace and write it to this file at shutdown (Chrome trace-event JSON, for Perfetto; `docs/tracing.md`) | none |

use crate::error::{Error, Result};
use crate::sched::PolicyKind;

#[derive(Clone, Debug)]
pub struct Config {
    /// CPU workers; `None` means one per core (less one per device driver).
    pub ncpu: Option<usize>,
    pub sched: PolicyKind,
    pub nnull: usize,
    /// OpenCL devices to use at most; `None`: all. `Config::default()` uses none (a CPU-only
    /// runtime); `from_env` uses all unless `WEFT_NOPENCL` says otherwise.
    pub nopencl: Option<usize>,
    /// Per OpenCL-device memory limit in bytes.
    pub opencl_mem_limit: Option<usize>,
    /// CUDA GPUs to use at most; `None`: all. `Config::default()` uses none (a CPU-only
    /// runtime); `from_env` uses all unless `WEFT_NCUDA` says otherwise.
    pub ncuda: Option<usize>,
    /// Per CUDA-GPU memory limit in bytes; `None`: 15/16 of the GPU's memory (the rest is
    /// headroom for the context, modules and cuBLAS workspaces, which the runtime does not count).
    pub cuda_mem_limit: Option<usize>,
    /// Directory of the on-disk kernel cache (`None`: memory only).
    pub kernel_cache: Option<std::path::PathBuf>,
    /// `$WEFT_HOME`: performance models live in `models/`, the bus model in `bus/`
    /// (`None`: in memory only, measured anew by each runtime).
    pub home: Option<std::path::PathBuf>,
    pub calibrate: crate::perfmodel::Calibrate,
    /// Measure the bus model again even if `home` has one for this machine.
    pub bus_calibrate: bool,
    /// dm-family placement weighs expected compute time by `alpha` and transfer time by `beta`.
    pub sched_alpha: f64,
    pub sched_beta: f64,
    /// `dmda`/`dmdas`: workers whose score is within this many of the task's predicted
    /// durations (on the best worker) of the best count as equally good, and the one of
    /// them that moves the fewest bytes gets the task (0: the best score alone decides).
    pub sched_locality: f64,
    /// `heteroprio`'s bucket orders (buckets are task priorities); `None`: automatic.
    pub heteroprio: Option<crate::sched::HeteroprioOrders>,
    /// OpenCL devices of type CPU run codelets that also have a CPU implementation (else
    /// only those that do not, as the OpenCL front end's kernels): such a device computes
    /// on the cores the CPU workers use.
    pub opencl_on_cpus: bool,
    /// CPU workers share their performance-model entries (architecture `cpu`); when false
    /// each has its own (`cpu0`, `cpu1`, ...).
    pub homogeneous_cpu: bool,
    /// Null devices take this many times as long as their implementation ran (≥ 1): a
    /// slow device for tests of model-driven placement.
    pub null_slowdown: f64,
    /// Per null-device memory limit in bytes.
    pub null_mem_limit: Option<usize>,
    /// Limit on runtime-allocated host memory in bytes.
    pub cpu_mem_limit: Option<usize>,
    pub bind: bool,
    /// The processing units (OS indices) the workers may run on. `None`: the process's CPU
    /// affinity when the runtime starts (what `taskset`, a cgroup or `mpirun` gave it). A
    /// front end started lazily, after the program may have bound its own thread, passes
    /// the affinity it read when it was loaded (the OpenMP runtime, as libgomp does).
    pub cpus: Option<Vec<usize>>,
    pub spin_us: u64,
    /// How long a GPU's driver with work in flight, and a thread waiting for a task that may
    /// run on a GPU (a device that computes off this machine's cores), spin (yielding the
    /// core) before they sleep: waking from sleep costs tens of µs, a tenth of a 0.5 ms
    /// kernel (see `worker/README.md`).
    pub wait_spin_us: u64,
    /// See [`crate::BACK_TO_BACK_US`] (its default), µs; 0: in-order successors always
    /// wait for their predecessor's completion.
    pub back_to_back_us: f64,
    pub stats: bool,
    /// Where to write an execution trace at shutdown (`docs/tracing.md`); `None`: record
    /// nothing.
    pub trace: Option<std::path::PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ncpu: None,
            sched: PolicyKind::Auto,
            nnull: 0,
            nopencl: Some(0),
            opencl_mem_limit: None,
            ncuda: Some(0),
            cuda_mem_limit: None,
            kernel_cache: None,
            home: None,
            calibrate: crate::perfmodel::Calibrate::Use,
            bus_calibrate: false,
            sched_alpha: 1.0,
            sched_beta: 1.0,
            sched_locality: 3.0,
            heteroprio: None,
            opencl_on_cpus: false,
            homogeneous_cpu: true,
            null_slowdown: 1.0,
            null_mem_limit: None,
            cpu_mem_limit: None,
            bind: true,
            cpus: None,
            spin_us: 50,
            wait_spin_us: 1000,
            back_to_back_us: crate::BACK_TO_BACK_US,
            stats: false,
            trace: None,
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

fn parse_num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T> {
    v.parse().map_err(|_| Error::Config(format!("{name}={v:?} is not a valid number")))
}

fn parse_bool(name: &str, v: &str) -> Result<bool> {
    match v {
        "1" | "yes" | "true" | "on" => Ok(true),
        "0" | "no" | "false" | "off" => Ok(false),
        _ => Err(Error::Config(format!("{name}={v:?}: expected 0 or 1"))),
    }
}

impl Config {
    /// Read the configuration from the environment. A malformed value is an error that
    /// names the variable.
    pub fn from_env() -> Result<Config> {
        Self::from_lookup(var)
    }

    pub(crate) fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let mut c = Config { nopencl: None, ncuda: None, ..Config::default() };
        c.home = match get("WEFT_HOME") {
            Some(h) => Some(std::path::PathBuf::from(h)),
            None => get("XDG_CACHE_HOME")
                .map(|x| std::path::PathBuf::from(x).join("weft"))
                .or_else(|| get("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/weft"))),
        };
        c.kernel_cache = c.home.as_ref().map(|h| h.join("kernels"));
        if let Some(v) = get("WEFT_CALIBRATE") {
            c.calibrate = match v.as_str() {
                "0" => crate::perfmodel::Calibrate::Use,
                "1" => crate::perfmodel::Calibrate::Keep,
                "2" => crate::perfmodel::Calibrate::Reset,
                _ => return Err(Error::Config(format!("WEFT_CALIBRATE={v:?}: expected 0, 1 or 2"))),
            };
        }
        if let Some(v) = get("WEFT_BUS_CALIBRATE") {
            c.bus_calibrate = parse_bool("WEFT_BUS_CALIBRATE", &v)?;
        }
        for (name, slot) in [
            ("WEFT_SCHED_ALPHA", &mut c.sched_alpha),
            ("WEFT_SCHED_BETA", &mut c.sched_beta),
            ("WEFT_SCHED_LOCALITY", &mut c.sched_locality),
        ] {
            if let Some(v) = get(name) {
                let x: f64 = parse_num(name, &v)?;
                if !(x.is_finite() && x >= 0.0) {
                    return Err(Error::Config(format!("{name}={v:?}: expected a number >= 0")));
                }
                *slot = x;
            }
        }
        if let Some(v) = get("WEFT_HETEROPRIO") {
            c.heteroprio = Some(v.parse().map_err(|e| Error::Config(format!("WEFT_HETEROPRIO={v:?}: {e}")))?);
        }
        if let Some(v) = get("WEFT_PERF_MODEL_HOMOGENEOUS_CPU") {
            c.homogeneous_cpu = parse_bool("WEFT_PERF_MODEL_HOMOGENEOUS_CPU", &v)?;
        }
        if let Some(v) = get("WEFT_OPENCL_ON_CPUS") {
            c.opencl_on_cpus = parse_bool("WEFT_OPENCL_ON_CPUS", &v)?;
        }
        if let Some(v) = get("WEFT_NULL_SLOWDOWN") {
            let x: f64 = parse_num("WEFT_NULL_SLOWDOWN", &v)?;
            if !(x.is_finite() && x >= 1.0) {
                return Err(Error::Config(format!("WEFT_NULL_SLOWDOWN={v:?}: expected a number >= 1")));
            }
            c.null_slowdown = x;
        }
        if let Some(v) = get("WEFT_NCPU") {
            let n: usize = parse_num("WEFT_NCPU", &v)?;
            c.ncpu = Some(n);
        }
        if let Some(v) = get("WEFT_SCHED") {
            c.sched = v.parse().map_err(|e: String| Error::Config(format!("WEFT_SCHED: {e}")))?;
        }
        if let Some(v) = get("WEFT_NNULL") {
            c.nnull = parse_num("WEFT_NNULL", &v)?;
        }
        if let Some(v) = get("WEFT_NOPENCL") {
            c.nopencl = Some(parse_num("WEFT_NOPENCL", &v)?);
        }
        if let Some(v) = get("WEFT_LIMIT_OPENCL_MEM") {
            c.opencl_mem_limit = Some(parse_num::<usize>("WEFT_LIMIT_OPENCL_MEM", &v)? << 20);
        }
        if let Some(v) = get("WEFT_NCUDA") {
            c.ncuda = Some(parse_num("WEFT_NCUDA", &v)?);
        }
        if let Some(v) = get("WEFT_LIMIT_CUDA_MEM") {
            c.cuda_mem_limit = Some(parse_num::<usize>("WEFT_LIMIT_CUDA_MEM", &v)? << 20);
        }
        if let Some(v) = get("WEFT_LIMIT_NULL_MEM") {
            c.null_mem_limit = Some(parse_num::<usize>("WEFT_LIMIT_NULL_MEM", &v)? << 20);
        }
        if let Some(v) = get("WEFT_LIMIT_CPU_MEM") {
            c.cpu_mem_limit = Some(parse_num::<usize>("WEFT_LIMIT_CPU_MEM", &v)? << 20);
        }
        if let Some(v) = get("WEFT_BIND") {
            c.bind = parse_bool("WEFT_BIND", &v)?;
        }
        if let Some(v) = get("WEFT_SPIN_US") {
            c.spin_us = parse_num("WEFT_SPIN_US", &v)?;
        }
        if let Some(v) = get("WEFT_WAIT_SPIN_US") {
            c.wait_spin_us = parse_num("WEFT_WAIT_SPIN_US", &v)?;
        }
        if let Some(v) = get("WEFT_BACK_TO_BACK_US") {
            c.back_to_back_us = parse_num("WEFT_BACK_TO_BACK_US", &v)?;
        }
        if let Some(v) = get("WEFT_STATS") {
            c.stats = parse_bool("WEFT_STATS", &v)?;
        }
        c.trace = get("WEFT_TRACE").map(std::path::PathBuf::from);
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config> {
        let m: HashMap<String, String> = pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn parses_every_variable() {
        let c = cfg(&[
            ("WEFT_NCPU", "3"),
            ("WEFT_SCHED", "ws"),
            ("WEFT_NNULL", "2"),
            ("WEFT_LIMIT_NULL_MEM", "4"),
            ("WEFT_BIND", "0"),
            ("WEFT_SPIN_US", "7"),
            ("WEFT_WAIT_SPIN_US", "0"),
            ("WEFT_BACK_TO_BACK_US", "0"),
            ("WEFT_STATS", "1"),
            ("WEFT_TRACE", "/tmp/t.json"),
        ])
        .unwrap();
        assert_eq!(c.trace.as_deref(), Some(std::path::Path::new("/tmp/t.json")));
        assert_eq!(cfg(&[]).unwrap().trace, None);
        assert_eq!(c.ncpu, Some(3));
        assert_eq!(c.sched, PolicyKind::Ws);
        assert_eq!(c.nnull, 2);
        assert_eq!(c.null_mem_limit, Some(4 << 20));
        assert!(!c.bind && c.stats);
        assert_eq!((c.spin_us, c.wait_spin_us), (7, 0));
        assert_eq!(c.back_to_back_us, 0.0);
    }

    #[test]
    fn device_counts_default_to_none_in_code_and_all_from_the_environment() {
        let d = Config::default();
        assert_eq!((d.nopencl, d.ncuda, d.cuda_mem_limit), (Some(0), Some(0), None));
        let e = cfg(&[]).unwrap();
        assert_eq!((e.nopencl, e.ncuda, e.cuda_mem_limit), (None, None, None));
        let c = cfg(&[("WEFT_NCUDA", "2"), ("WEFT_LIMIT_CUDA_MEM", "64"), ("WEFT_NOPENCL", "0")]).unwrap();
        assert_eq!((c.nopencl, c.ncuda, c.cuda_mem_limit), (Some(0), Some(2), Some(64 << 20)));
        assert_eq!(cfg(&[("WEFT_NCUDA", "0")]).unwrap().ncuda, Some(0));
    }

    #[test]
    fn bad_cuda_values_name_the_variable() {
        let e = cfg(&[("WEFT_NCUDA", "all")]).unwrap_err().to_string();
        assert!(e.contains("WEFT_NCUDA"), "{e}");
        let e = cfg(&[("WEFT_LIMIT_CUDA_MEM", "-1")]).unwrap_err().to_string();
        assert!(e.contains("WEFT_LIMIT_CUDA_MEM"), "{e}");
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = cfg(&[("WEFT_NCPU", "lots")]).unwrap_err().to_string();
        assert!(e.contains("WEFT_NCPU"), "{e}");
        let e = cfg(&[("WEFT_SCHED", "fastest")]).unwrap_err().to_string();
        assert!(e.contains("WEFT_SCHED") && e.contains("eager"), "{e}");
        let e = cfg(&[("WEFT_BIND", "maybe")]).unwrap_err().to_string();
        assert!(e.contains("WEFT_BIND"), "{e}");
        for (var, bad) in [("WEFT_CALIBRATE", "3"), ("WEFT_SCHED_ALPHA", "-1"), ("WEFT_SCHED_BETA", "x"), ("WEFT_NULL_SLOWDOWN", "0.5")] {
            let e = cfg(&[(var, bad)]).unwrap_err().to_string();
            assert!(e.contains(var), "{e}");
        }
    }

    #[test]
    fn model_variables_are_read() {
        let c = cfg(&[
            ("WEFT_CALIBRATE", "2"),
            ("WEFT_BUS_CALIBRATE", "1"),
            ("WEFT_SCHED_ALPHA", "0.5"),
            ("WEFT_SCHED_BETA", "2"),
            ("WEFT_SCHED_LOCALITY", "0.5"),
            ("WEFT_OPENCL_ON_CPUS", "1"),
            ("WEFT_PERF_MODEL_HOMOGENEOUS_CPU", "0"),
            ("WEFT_NULL_SLOWDOWN", "4"),
            ("WEFT_HOME", "/tmp/wh"),
            ("WEFT_SCHED", "heft"),
        ])
        .unwrap();
        assert_eq!(c.calibrate, crate::perfmodel::Calibrate::Reset);
        assert!(c.bus_calibrate && c.opencl_on_cpus && !c.homogeneous_cpu);
        assert_eq!((c.sched_alpha, c.sched_beta, c.sched_locality, c.null_slowdown), (0.5, 2.0, 0.5, 4.0));
        assert_eq!(c.home.as_deref(), Some(std::path::Path::new("/tmp/wh")));
        assert_eq!(c.kernel_cache.as_deref(), Some(std::path::Path::new("/tmp/wh/kernels")));
        assert_eq!(c.sched, PolicyKind::Dmda);
    }

    #[test]
    fn heteroprio_orders_are_read_and_bad_ones_say_why() {
        use crate::task::Arch;
        let c = cfg(&[("WEFT_HETEROPRIO", " cpu=2, 1,0 ; opencl=0;")]).unwrap();
        let want = vec![(Arch::Cpu, vec![2, 1, 0]), (Arch::OpenCl, vec![0])];
        assert_eq!(c.heteroprio.map(|h| h.orders), Some(want));
        assert_eq!(Config::default().heteroprio, None);
        for (bad, why) in [
            ("gpu=1", "not an architecture"),
            ("cpu=1,x", "not a priority"),
            ("cpu=1;cpu=2", "given twice"),
            ("cpu=1,1", "listed twice"),
            ("cpu", "expected"),
            (";", "no architecture"),
        ] {
            let e = cfg(&[("WEFT_HETEROPRIO", bad)]).unwrap_err().to_string();
            assert!(e.contains("WEFT_HETEROPRIO") && e.contains(why), "{bad}: {e}");
        }
    }
}
