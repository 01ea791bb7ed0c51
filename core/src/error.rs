//! Errors of the runtime. Rust callers get these in a `Result`; the C API turns them into
//! an error code plus a message (`capi`).

use crate::task::TaskError;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot register data: {0}")]
    InvalidData(String),
    #[error("codelet '{codelet}' declares {declared} buffers but the task accesses {given}")]
    BufferCount { codelet: String, declared: usize, given: usize },
    #[error("codelet '{0}' has no implementation for any worker of this machine")]
    NoImplementation(String),
    #[error("data handle {0} is unregistered")]
    Unregistered(u64),
    #[error("data handle {0} has no reduction methods: call set_reduction before REDUX accesses")]
    NoReductionMethods(u64),
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("tag {0} is already bound to a task that has not completed")]
    TagInUse(u64),
    #[error("dependency cycle through tag {0}: the task would wait for itself")]
    DependencyCycle(u64),
    #[error("waiting would never end: tasks wait on tags that no task carries ({0:?})")]
    Stalled(Vec<u64>),
    #[error("this call would deadlock when made from inside a task")]
    WouldDeadlock,
    #[error("out of memory on memory node {node} ({bytes} bytes requested)")]
    OutOfMemory { node: usize, bytes: usize },
    /// Transient: every eviction candidate was in use. Task preparation retries on it.
    #[error("memory node {0} is full and its replicas are in use")]
    MemoryBusy(usize),
    #[error("device error: {0}")]
    Device(#[from] weft_vendors::DeviceError),
    #[error("task failed: {0}")]
    Task(#[from] TaskError),
    /// What `wait_for_all` reports when tasks completed unsuccessfully since it last did.
    #[error("{failed} task(s) failed and {cancelled} were cancelled since the last wait; the first: {first}")]
    TasksFailed { failed: usize, cancelled: usize, first: TaskError },
    #[error("the runtime is shut down")]
    ShutDown,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
