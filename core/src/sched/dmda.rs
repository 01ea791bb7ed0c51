//! `dmda`: `dm` that also counts the expected time to bring the task's inputs to each
//! worker's memory node (the bus model): a worker's score is
//! `alpha · expected end + beta · transfer time` (`WEFT_SCHED_ALPHA`, `WEFT_SCHED_BETA`,
//! both 1 by default, as StarPU's). See `dm.rs` for the engine.

use super::SchedCtx;
use super::dm::Dm;

pub(crate) fn new(ctx: SchedCtx) -> Dm {
    Dm::new("dmda", ctx, true, false)
}
