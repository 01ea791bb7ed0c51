//! Weft's OpenMP runtime: the GNU libgomp ABI (`GOMP_*`, `omp_*`) on Weft's CPU workers
//! (DESIGN.md "The OpenMP runtime"). Linked into `libweft.so`, which exports these symbols
//! with libgomp's symbol versions (abi/symver.rs), so the library serves gcc-built programs
//! both through `LD_PRELOAD` and as a `libgomp.so.1` stand-in. `abi/kmp/` adds LLVM
//! libomp's `__kmpc_*` ABI for clang-built programs (symbol version `VERSION`; a
//! `libomp.so.5` stand-in) on the same teams, worksharing, locks and tasks.
//!
//! Layout: `abi/` is the only FFI layer (one file per area, thin entry points; `abi/gomp/`
//! decodes GCC's data layouts (task flags, depend arrays, task reduction descriptors),
//! `abi/kmp/` LLVM's, into the Rust types below); `outlined.rs` the compiler's region
//! bodies as the core calls them; `team.rs`
//! forks and joins teams on core workers (plus extra OS threads when needed); `ws.rs` holds
//! worksharing; `lock.rs` the mutexes; `env.rs` the environment; `sys.rs` futexes and the
//! spin policy; `task.rs` explicit tasks (their dependencies, decoded by the ABI layer
//! into `task::Deps`, ordered by a map of depend addresses per parent task); `trace.rs`
//! what `WEFT_TRACE` records of tasks and constructs; `watch.rs` what a barrier waiter says
//! when the team's threads met different barriers. Outside `abi/`, a thread's context
//! and a task's (or member's) team are reached through the handles `team::CtxRef` and
//! `team::TeamRef`, whose lifetime argument is made once, in team.rs; a region's body (and
//! a task body its creator runs at once) is an `outlined::Outlined`, made by the ABI layer
//! once; teams are owned by their primary
//! thread (team.rs), worksharing slots share their state as atomics and a mutex (ws.rs);
//! taskgroups and child counters are shared (`Arc`).
//!
//! The crate's documentation is for its developers (`cargo doc --document-private-items`):
//! its public items (the ABI's entry points) link to the private ones that do the work.
#![allow(rustdoc::private_intra_doc_links)]

pub mod abi;
mod env;
mod lock;
mod outlined;
mod places;
mod sys;
mod task;
mod team;
mod trace;
mod watch;
mod ws;
