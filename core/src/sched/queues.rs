//! Lock-free FIFO queues shared by the policies: one per set of architectures a task can
//! run on, so a worker only ever takes tasks it can run.

use crate::task::{Arch, TaskRef};
use crossbeam_deque::{Injector, Steal};

pub(crate) fn steal(q: &Injector<TaskRef>) -> Option<TaskRef> {
    loop {
        match q.steal() {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

/// One injector per non-empty architecture mask.
pub(crate) struct MaskQueues {
    queues: Vec<Injector<TaskRef>>,
}

impl MaskQueues {
    pub fn new() -> MaskQueues {
        let n = 1 << Arch::ALL.len();
        MaskQueues { queues: (0..n).map(|_| Injector::new()).collect() }
    }
    pub fn push(&self, t: TaskRef) {
        let m = t.arch_mask as usize;
        self.queues[m].push(t);
    }
    /// A task runnable by `arch`: tasks only it can run first, then shared ones.
    /// `no_cpu`: only tasks without a CPU implementation (a device sharing the CPU
    /// workers' cores, `WorkerDesc::shares_cores`).
    pub fn pop(&self, arch: Arch, no_cpu: bool) -> Option<TaskRef> {
        let bit = arch.bit() as usize;
        if let Some(t) = steal(&self.queues[bit]) {
            return Some(t);
        }
        let cpu = if no_cpu { Arch::Cpu.bit() as usize } else { 0 };
        (1..self.queues.len()).filter(|m| m & bit != 0 && *m != bit && m & cpu == 0).find_map(|m| steal(&self.queues[m]))
    }
    pub fn is_empty(&self) -> bool {
        self.queues.iter().all(|q| q.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::tests::task;

    #[test]
    fn every_mask_of_every_arch_has_a_queue() {
        let q = MaskQueues::new();
        assert_eq!(q.queues.len(), 1 << Arch::ALL.len());
        let all = Arch::ALL.iter().fold(0, |m, a| m | a.bit());
        q.push(task(1, Arch::Cpu.bit() | Arch::Cuda.bit()));
        q.push(task(2, Arch::Cuda.bit()));
        q.push(task(3, all));
        q.push(task(4, Arch::Cpu.bit()));
        // Tasks only the arch can run first, then shared ones.
        assert_eq!(q.pop(Arch::Cuda, false).map(|t| t.id), Some(2));
        assert!(q.pop(Arch::OpenCl, false).is_some_and(|t| t.id == 3));
        assert_eq!(q.pop(Arch::Cpu, false).map(|t| t.id), Some(4));
        assert_eq!(q.pop(Arch::Cuda, false).map(|t| t.id), Some(1));
        assert!(q.pop(Arch::Cuda, false).is_none() && q.pop(Arch::Null, false).is_none() && q.is_empty());
    }
}
