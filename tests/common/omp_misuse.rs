//! What the misuse programs of tests/omp must print, whichever compiler built them
//! (tests/omp.rs for gcc's GOMP ABI, tests/omp_clang.rs for clang's kmp one).

use std::process::Output;

/// lock_misuse.c's four misuses, a line each naming the call.
pub const LOCK_MISUSE: [&str; 4] = [
    "omp_destroy_lock on a lock that is locked",
    "omp_unset_lock on a lock that another thread holds",
    "omp_destroy_nest_lock on a lock that is held",
    "omp_unset_nest_lock on a lock the caller does not hold",
];

/// fulfill_twice.c's run (`how` names it in failures): the first fulfil completed the task,
/// the second aborted the program with a message naming the call.
pub fn assert_fulfilled_twice(how: &str, out: &Output) {
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("fulfilled once"), "{how}: the first fulfil did not complete the task:\n{stdout}\n{stderr}");
    assert!(!out.status.success() && !stdout.contains("not reached"), "{how}: a second fulfil went on:\n{stdout}\n{stderr}");
    assert!(
        stderr.contains("omp_fulfill_event") && stderr.contains("not an event waiting to be fulfilled"),
        "{how}: no message:\n{stderr}"
    );
}
