//! The README is a user guide (issue 35): its first code block, right under the title, holds
//! exactly the two commands a new user runs, and every repository path it or `docs/*.md`
//! names (in backticks, in code blocks or as a link) exists.
//!
//! A path counts when it starts with one of the repository's top-level directories
//! ([`TOP`]); links are resolved against the file that holds them, everything else against
//! the repository root. Paths under `target/`, `$WEFT_HOME` or `~` are the user's, not the
//! repository's. [`PENDING`] names paths that another branch adds; the test fails once one
//! exists, so that it is taken off the list.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level directories whose paths are checked.
const TOP: &[&str] = &[
    "scripts/",
    "docs/",
    "bench/",
    "examples/",
    "include/",
    "core/",
    "vendors/",
    "icd/",
    "omp/",
    "mpi/",
    "src/",
    "tests/",
    "cli/",
    ".ci/",
];

/// Paths named before they land (written on another branch at the same time).
const PENDING: &[&str] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The lines of the first fenced code block, and the non-blank lines before it.
fn first_block(text: &str) -> (Vec<&str>, Vec<&str>) {
    let mut before = Vec::new();
    let mut lines = text.lines();
    for l in lines.by_ref() {
        if l.trim_start().starts_with("```") {
            let body = lines.by_ref().take_while(|l| !l.trim_start().starts_with("```")).collect();
            return (body, before);
        }
        if !l.trim().is_empty() {
            before.push(l);
        }
    }
    panic!("no code block");
}

/// The commands of a shell block: each line without its comment, blank lines dropped.
fn commands<'a>(block: &[&'a str]) -> Vec<&'a str> {
    block.iter().map(|l| l.split(" #").next().unwrap().trim()).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// A path is named (`Path` relative to `base`), as written.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Named {
    base: PathBuf,
    path: String,
}

/// The repository paths `text` (the file `file`, in the repository at `root`) names.
fn named_paths(root: &Path, file: &Path, text: &str) -> BTreeSet<Named> {
    let dir = file.parent().unwrap().to_path_buf();
    let mut out = BTreeSet::new();
    let mut word = |w: &str, base: &Path, link: bool| {
        let w = w.trim_start_matches(['"', '\'', '(']).trim_end_matches(['"', '\'', ')', ',', ';', ':', '.']);
        // `file.rs:12` names the file; `page.md#part` the page.
        let w = w.split('#').next().unwrap();
        let w = match w.rsplit_once(':') {
            Some((f, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => f,
            _ => w,
        };
        if w.is_empty() || w.contains("://") || w.contains(['*', '{', '$', '~', '<', '…']) {
            return;
        }
        // A link resolves against its file; a path that starts with a top-level directory
        // is the repository's (a link may climb out of docs/ first).
        let (base, rel) = if link {
            let joined = base.join(w);
            let Ok(rel) = normalise(&joined).strip_prefix(root).map(Path::to_path_buf) else { return };
            (root.to_path_buf(), rel.to_string_lossy().into_owned())
        } else {
            (base.to_path_buf(), w.to_string())
        };
        if TOP.iter().any(|t| rel.starts_with(t)) || (link && !rel.is_empty()) {
            out.insert(Named { base, path: rel });
        }
    };
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            line.split_whitespace().for_each(|w| word(w, root, false));
            continue;
        }
        // Backtick spans: every word of each.
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 {
                span.split_whitespace().filter(|w| !w.contains('=')).for_each(|w| word(w, root, false));
            }
        }
        // Markdown links: `](target)`.
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            word(&rest[..end], &dir, true);
        }
    }
    out
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The named paths of `file` that do not exist (pending ones aside).
fn missing(root: &Path, file: &Path, text: &str) -> (Vec<String>, usize) {
    let named = named_paths(root, file, text);
    let n = named.len();
    let gone =
        named.into_iter().filter(|p| !PENDING.contains(&p.path.as_str()) && !p.base.join(&p.path).exists()).map(|p| p.path).collect();
    (gone, n)
}

#[test]
fn two_commands_first() {
    let text = read(&root().join("README.md"));
    let (block, before) = first_block(&text);
    assert_eq!(before, ["# Weft"], "only the title comes before the two commands");
    assert_eq!(commands(&block), ["scripts/demo.sh", "scripts/test.sh"], "the README's first code block");
    for c in ["scripts/demo.sh", "scripts/test.sh"] {
        assert!(root().join(c).exists(), "{c}");
    }
}

#[test]
fn readme_paths_exist() {
    let root = root();
    let file = root.join("README.md");
    let text = read(&file);
    assert!(!text.contains("shared/DESIGN.md"), "the design is docs/ARCHITECTURE.md, in the repository");
    let (gone, n) = missing(&root, &file, &text);
    assert!(gone.is_empty(), "README.md names paths that do not exist: {gone:?}");
    // The guide names its scripts, docs and examples; far fewer means the scan broke.
    assert!(n >= 20, "only {n} paths found in README.md");
    for d in ["docs/ARCHITECTURE.md", "docs/opencl.md", "docs/openmp.md", "bench/RESULTS.md"] {
        assert!(text.contains(d), "README.md links {d}");
    }
}

#[test]
fn docs_paths_exist() {
    let root = root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.push(root.join("bench/RESULTS.md"));
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    let mut all = Vec::new();
    for f in &files {
        let (gone, _) = missing(&root, f, &read(f));
        all.extend(gone.into_iter().map(|g| format!("{}: {g}", f.strip_prefix(&root).unwrap().display())));
    }
    assert!(all.is_empty(), "paths that do not exist: {all:?}");
}

#[test]
fn pending_paths_are_pending() {
    for p in PENDING {
        assert!(!root().join(p).exists(), "{p} exists now: take it off PENDING in tests/readme.rs");
    }
}

/// The scan finds what it must, so that the tests above cannot pass by finding nothing.
#[test]
fn scan_finds_paths() {
    let root = root();
    let file = root.join("docs/x.md");
    let text = "# T\n\n```sh\nscripts/nope.sh --x   # run\n```\n\nSee `bench/none/run.sh 5`, `WEFT_X=1 core/src/nope.rs:12`,\n\
                [a](../tests/nope.rs), [b](nope.md#part), `target/release/libweft.so`, `$WEFT_HOME/models`,\n\
                <https://example.com/scripts/x.sh> and `scripts/demo.sh`.\n";
    let (gone, n) = missing(&root, &file, text);
    assert_eq!(gone, ["bench/none/run.sh", "core/src/nope.rs", "docs/nope.md", "scripts/nope.sh", "tests/nope.rs"]);
    assert_eq!(n, 6);
    let (block, before) = first_block(text);
    assert_eq!(before, ["# T"]);
    assert_eq!(commands(&block), ["scripts/nope.sh --x"]);
}
