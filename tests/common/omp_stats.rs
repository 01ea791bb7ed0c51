//! What `WEFT_STATS=1` must print for tests/omp/stats.c, whichever compiler built it
//! (tests/omp.rs for gcc's GOMP ABI, tests/omp_clang.rs for clang's kmp one).

/// The statistics in `stderr` count each team member's share ("jobs") and each task body
/// ("tasks") on the worker or "other threads" line where it ran, exactly as the program's
/// own "ran:" line counted them.
pub fn assert_counts_as_the_program(stderr: &str) {
    let field = |l: &str, name: &str| -> u64 {
        let f: Vec<&str> = l.split_whitespace().collect();
        let at = f.iter().position(|&w| w == name).unwrap_or_else(|| panic!("no {name} in {l:?}:\n{stderr}"));
        f[at + 1].parse().unwrap_or_else(|_| panic!("bad {name} in {l:?}:\n{stderr}"))
    };
    let sum = |prefix: &str, name: &str| -> u64 { stderr.lines().filter(|l| l.starts_with(prefix)).map(|l| field(l, name)).sum() };
    // "ran: worker jobs A other jobs B worker tasks C other tasks D", as the program counted.
    let ran = stderr.lines().find(|l| l.starts_with("ran:")).unwrap_or_else(|| panic!("no counts printed:\n{stderr}"));
    let want: Vec<u64> = ran.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let seen = vec![sum("worker ", "jobs"), sum("other threads", "jobs"), sum("worker ", "tasks"), sum("other threads", "tasks")];
    assert_eq!(want.len(), 4, "{ran}");
    // 7 regions of 4, 1 and 4 threads: 5 * 4 + 1 + 4 shares; 16 tasks per thread of the
    // last, of which each runs one itself (if(0)): workers run tasks too.
    assert_eq!(want[0] + want[1], 25, "{stderr}");
    assert_eq!(want[2] + want[3], 64, "{stderr}");
    assert!(want[0] > 0 && want[2] > 0, "no share or no task ran on a worker:\n{stderr}");
    assert_eq!(seen, want, "statistics (worker jobs, other jobs, worker tasks, other tasks) against what ran:\n{stderr}");
}
