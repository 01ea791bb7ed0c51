//! `lws`: locality-aware work stealing: `ws` whose workers steal from the workers nearest to
//! them in the machine's topology first (same core, then same package, then the rest), so
//! stolen work tends to find its data in a shared cache.

use super::SchedCtx;
use super::ws::Ws;

pub(crate) fn new(ctx: SchedCtx) -> Ws {
    Ws::new(ctx, true)
}
