//! `dmdas`: `dmda` whose per-worker queues are sorted by task priority (FIFO among equal
//! priorities), so a worker takes the most urgent of the tasks placed on it first: the
//! critical path of a factorisation whose application gives priorities. StarPU's
//! documentation recommends it; see `dm.rs` for the engine.

use super::SchedCtx;
use super::dm::Dm;

pub(crate) fn new(ctx: SchedCtx) -> Dm {
    Dm::new("dmdas", ctx, true, true)
}
