//! `weft machine`: the machine as a runtime started from the environment sees it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_core::topology::Topology;
use weft_core::{Config, PolicyKind, Runtime};

/// The text of `weft machine`.
pub fn show() -> Result<String, String> {
    let mut config = Config::from_env().map_err(|e| e.to_string())?;
    let asked = config.sched;
    // A policy that places by models measures the bus at start when nothing is cached: this
    // command must not, nor write a trace or print statistics at exit.
    config.sched = PolicyKind::Eager;
    config.trace = None;
    config.stats = false;
    let home = config.home.clone();
    let topo = Topology::detect();
    let rt = Runtime::new(config).map_err(|e| format!("cannot start a runtime: {e}"))?;
    let mut o = String::new();

    let ncores = topo.core_of.iter().collect::<std::collections::BTreeSet<_>>().len();
    let npkg = topo.package_of.iter().collect::<std::collections::BTreeSet<_>>().len();
    let _ = writeln!(o, "cores: {} processing units on {ncores} cores in {npkg} package{}", topo.npus(), if npkg == 1 { "" } else { "s" },);
    // package -> core -> OS indices of its PUs.
    let mut tree: BTreeMap<usize, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
    for (i, &pu) in topo.pus.iter().enumerate() {
        tree.entry(topo.package_of[i]).or_default().entry(topo.core_of[i]).or_default().push(pu);
    }
    for (pkg, cores) in &tree {
        let list: Vec<String> =
            cores.iter().map(|(c, pus)| format!("{c}:[{}]", pus.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(","))).collect();
        let _ = writeln!(o, "  package {pkg}: core:[PU os indices] {}", list.join(" "));
    }

    let nodes = rt.memory_nodes();
    let _ = writeln!(o, "\nmemory nodes: {}", nodes.len());
    let _ = writeln!(o, "  {:>4} {:<7} {:>12} {:>12}  name", "node", "kind", "memory", "limit");
    let mib = |b: Option<usize>| b.map_or("-".to_string(), |b| format!("{} MiB", b >> 20));
    for n in nodes {
        let _ = writeln!(
            o,
            "  {:>4} {:<7} {:>12} {:>12}  {}",
            n.id,
            n.device.kind().to_string(),
            mib(n.device.memory_size()),
            mib(n.limit),
            n.device.name()
        );
    }

    let workers = rt.workers();
    let _ = writeln!(o, "\nworkers: {}", workers.len());
    let _ = writeln!(o, "  {:>3} {:<10} {:<7} {:>4} {:>10}  model arch", "id", "name", "kind", "node", "core(PU)");
    for w in workers {
        let at = match w.pu {
            Some(pu) => match topo.pus.iter().position(|&p| p == pu) {
                Some(i) => format!("{}({pu})", topo.core_of[i]),
                None => format!("?({pu})"),
            },
            None => "unbound".to_string(),
        };
        let note =
            if w.shares_cores { "  (computes on the CPU workers' cores: takes only tasks without a CPU implementation)" } else { "" };
        let _ = writeln!(o, "  {:>3} {:<10} {:<7} {:>4} {:>10}  {}{note}", w.id, w.name, w.arch.name(), w.node, at, w.perf_arch);
    }
    let left_out = rt.devices_left_out();
    if !left_out.is_empty() {
        let _ = writeln!(o, "\nleft out:");
        for note in left_out {
            let _ = writeln!(o, "  {note}");
        }
    }
    let kinds = workers.iter().filter(|w| !w.shares_cores).fold(0u8, |m, w| m | w.arch.bit());
    let policy = asked.resolve(kinds);
    let _ = writeln!(
        o,
        "\npolicy: {}{}",
        policy.name(),
        if asked == PolicyKind::Auto { " (the default for these workers)" } else { " (WEFT_SCHED)" }
    );

    match &home {
        Some(h) => {
            let dir = h.join("bus");
            match weft_core::perfmodel::cached_bus_report(nodes, &dir) {
                Some(Ok(report)) => {
                    let _ = write!(o, "\n{report}");
                }
                Some(Err(why)) => {
                    let _ = writeln!(o, "\nbus model: cached file unusable: {why}");
                }
                None if nodes.len() <= 1 => o.push_str("\nbus model: none (no device: host memory only)\n"),
                None => {
                    let _ = writeln!(
                        o,
                        "\nbus model: not measured yet for these devices (none cached in {}; a run with a model-driven policy measures it)",
                        dir.display()
                    );
                }
            }
        }
        None => o.push_str("\nbus model: no WEFT_HOME, nothing cached\n"),
    }
    drop(rt);
    Ok(o)
}
