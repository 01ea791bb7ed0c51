//! The `flags` of `GOMP_task` and `GOMP_taskloop` (gomp-constants.h's GOMP_TASK_FLAG_*),
//! decoded into the runtime's [`TaskFlags`] and [`TaskloopFlags`].

use crate::task::{TaskFlags, TaskloopFlags};

pub const UNTIED: u32 = 1;
pub const FINAL: u32 = 2;
pub const MERGEABLE: u32 = 4;
pub const DEPEND: u32 = 8;
pub const PRIORITY: u32 = 16;
pub const UP: u32 = 256;
pub const GRAINSIZE: u32 = 512;
pub const IF: u32 = 1024;
pub const NOGROUP: u32 = 2048;
pub const REDUCTION: u32 = 4096;
pub const DETACH: u32 = 8192;
pub const STRICT: u32 = 16384;

/// A task's clauses. `untied` and `mergeable` change nothing here: a Weft task runs on one
/// thread from start to end, and is never merged.
pub fn task(flags: u32) -> TaskFlags {
    TaskFlags { final_: flags & FINAL != 0, depend: flags & DEPEND != 0, priority: flags & PRIORITY != 0, detach: flags & DETACH != 0 }
}

/// A taskloop's clauses: those of its tasks, and its own.
pub fn taskloop(flags: u32) -> (TaskFlags, TaskloopFlags) {
    let l = TaskloopFlags {
        up: flags & UP != 0,
        grainsize: flags & GRAINSIZE != 0,
        strict: flags & STRICT != 0,
        if_: flags & IF != 0,
        nogroup: flags & NOGROUP != 0,
        reduction: flags & REDUCTION != 0,
    };
    (task(flags), l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_flags() {
        assert_eq!(task(0), TaskFlags::default());
        // GCC: `task final(1) priority(p) depend(...)`, untied and mergeable too.
        let f = task(UNTIED | FINAL | MERGEABLE | DEPEND | PRIORITY);
        assert_eq!(f, TaskFlags { final_: true, depend: true, priority: true, detach: false });
        assert!(task(DETACH).detach);
    }

    #[test]
    fn taskloop_flags() {
        // `taskloop grainsize(strict: g) nogroup` over an unsigned loop counting up, if(1).
        let (t, l) = taskloop(UP | GRAINSIZE | STRICT | IF | NOGROUP);
        assert_eq!(t, TaskFlags::default());
        assert_eq!(l, TaskloopFlags { up: true, grainsize: true, strict: true, if_: true, nogroup: true, reduction: false });
        let (t, l) = taskloop(REDUCTION | FINAL | PRIORITY);
        assert!(t.final_ && t.priority && l.reduction && !l.if_ && !l.grainsize);
    }
}
