//! The machine's cores, and binding a thread to one of them.
//!
//! Weft uses `hwlocality` (safe, maintained bindings to hwloc 2.x) rather than `hwloc2`
//! (unmaintained since 2022, partial hwloc 2 coverage). Without the `hwloc` feature, or
//! when hwloc fails, the core count comes from the OS and workers run unbound.

/// Processing units in the order workers are bound to them, with a locality key per unit
/// (the index of the shared cache or package it sits in) used by the `lws` policy.
#[derive(Clone, Debug)]
pub struct Topology {
    /// OS indices of the processing units.
    pub pus: Vec<usize>,
    /// For each PU, the index of the core it belongs to.
    pub core_of: Vec<usize>,
    /// For each PU, the index of the package (socket) it belongs to.
    pub package_of: Vec<usize>,
    #[cfg(feature = "hwloc")]
    hw: Option<std::sync::Arc<hwlocality::Topology>>,
}

impl Topology {
    /// The processing units the process may run on now (its CPU affinity).
    pub fn detect() -> Topology {
        Self::detect_within(None)
    }

    /// The processing units among `cpus` (OS indices), or, for `None`, those the process
    /// may run on now (its CPU affinity: `taskset`, a cgroup, or `mpirun` binding each rank
    /// to its cores): workers bound outside them would fail to bind, and ranks of one
    /// machine would all bind their first worker to PU 0.
    pub fn detect_within(cpus: Option<&[usize]>) -> Topology {
        #[cfg(feature = "hwloc")]
        if let Some(t) = Self::from_hwloc(cpus) {
            return t;
        }
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        Topology {
            pus: (0..n).collect(),
            core_of: (0..n).collect(),
            package_of: vec![0; n],
            #[cfg(feature = "hwloc")]
            hw: None,
        }
    }

    #[cfg(feature = "hwloc")]
    fn from_hwloc(cpus: Option<&[usize]>) -> Option<Topology> {
        use hwlocality::object::types::ObjectType;
        let hw = hwlocality::Topology::new().ok()?;
        let mut pus = Vec::new();
        let mut core_of = Vec::new();
        let mut package_of = Vec::new();
        for pu in hw.objects_with_type(ObjectType::PU) {
            pus.push(pu.os_index()?);
            let mut core = 0;
            let mut pkg = 0;
            let mut a = pu.parent();
            while let Some(o) = a {
                match o.object_type() {
                    ObjectType::Core => core = o.logical_index(),
                    ObjectType::Package => pkg = o.logical_index(),
                    _ => {}
                }
                a = o.parent();
            }
            core_of.push(core);
            package_of.push(pkg);
        }
        let allowed: Option<Vec<bool>> = match cpus {
            Some(c) => Some(pus.iter().map(|p| c.contains(p)).collect()),
            None => hw
                .cpu_binding(hwlocality::cpu::binding::CpuBindingFlags::PROCESS)
                .ok()
                .map(|set| pus.iter().map(|&p| set.is_set(p)).collect()),
        };
        if let Some(keep) = allowed
            && keep.iter().any(|&k| k)
        {
            let pick = |v: Vec<usize>| v.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(x, _)| x).collect::<Vec<_>>();
            pus = pick(pus);
            core_of = pick(core_of);
            package_of = pick(package_of);
        }
        if pus.is_empty() {
            return None;
        }
        Some(Topology { pus, core_of, package_of, hw: Some(std::sync::Arc::new(hw)) })
    }

    pub fn npus(&self) -> usize {
        self.pus.len()
    }

    /// Bind the calling thread to processing unit `i` (modulo the count). Returns whether it worked.
    pub fn bind_current_thread(&self, i: usize) -> bool {
        self.bind_current_thread_os(self.pus[i % self.pus.len()])
    }

    /// Bind the calling thread to the processing unit of OS index `os`. Returns whether it
    /// worked.
    pub fn bind_current_thread_os(&self, os: usize) -> bool {
        #[cfg(feature = "hwloc")]
        if let Some(hw) = &self.hw {
            use hwlocality::cpu::binding::CpuBindingFlags;
            use hwlocality::cpu::cpuset::CpuSet;
            let mut set = CpuSet::new();
            set.set(os);
            return hw.bind_cpu(&set, CpuBindingFlags::THREAD).is_ok();
        }
        let _ = os;
        false
    }

    /// Locality distance between PUs `a` and `b`: 0 same core, 1 same package, 2 otherwise.
    pub fn distance(&self, a: usize, b: usize) -> u32 {
        let (a, b) = (a % self.npus(), b % self.npus());
        if self.core_of[a] == self.core_of[b] {
            0
        } else if self.package_of[a] == self.package_of[b] {
            1
        } else {
            2
        }
    }
}

/// Helpers of a host copy split by a bound worker run on the processing units after the
/// worker's own, one each (left to themselves, they start on the worker's core and wait
/// for the OS to move them, milliseconds on an idle machine, longer than the copy).
impl weft_vendors::CopyPlacement for Topology {
    fn caller(&self) -> Option<usize> {
        crate::worker::bound_pu()
    }
    fn place_helper(&self, caller: usize, i: usize) {
        let at = self.pus.iter().position(|&p| p == caller).unwrap_or(0);
        self.bind_current_thread(at + i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_at_least_one_pu_and_binds() {
        let t = Topology::detect();
        assert!(t.npus() >= 1);
        assert_eq!(t.core_of.len(), t.npus());
        assert_eq!(t.distance(0, 0), 0);
        #[cfg(feature = "hwloc")]
        assert!(t.bind_current_thread(0), "hwloc could not bind a thread");
    }
}
