//! The bus model: latency and bandwidth between memory nodes. STUB.

/// Latency and bandwidth of every ordered pair of memory nodes.
pub(crate) struct BusModel {
    n: usize,
}

impl BusModel {
    pub(crate) fn unmeasured(n: usize) -> BusModel {
        BusModel { n }
    }
    /// Expected time to move `bytes` from node `src` to node `dst`, µs.
    pub(crate) fn transfer_us(&self, src: usize, dst: usize, bytes: usize) -> f64 {
        if src == dst || src >= self.n || dst >= self.n { 0.0 } else { 10.0 + bytes as f64 / 1000.0 }
    }
}
