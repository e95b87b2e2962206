//! The in-process checks: escapes refused, diagnostics name the path and
//! the rule, and the kernel agrees on the same paths.

use smith_sandbox::{Confinement, Mode, Network, Policy};

use crate::fixture::{Tree, sh, text};

#[test]
fn link_and_dot_dot_escapes_are_refused() {
    let t = Tree::new();
    let p = t.policy(Network::Off);
    for path in [
        t.home.join(".ssh/id_key"),
        t.project.join("keys/id_key"),
        t.project.join("keys"),
        t.project.join("../home/.ssh/id_key"),
        t.project.join("./keys/../.ssh/./id_key"),
        t.home.join(".ssh"),
        t.auth.clone(),
    ] {
        let d = p.check_read(&path).expect_err("a read of a denied path");
        assert_eq!(d.code(), "sandbox.read-denied", "{}", d.render_plain());
        let shown = d.render_plain();
        assert!(shown.contains(&path.display().to_string()), "{shown}");
        let d = p.check_write(&path).expect_err("a write of a denied path");
        assert_eq!(d.code(), "sandbox.write-denied", "{}", d.render_plain());
    }
    let d = p
        .check_read(t.project.join("keys/id_key"))
        .expect_err("denied");
    let shown = d.render_plain();
    assert!(
        shown.contains(&format!(
            "resolves to {}",
            t.home.join(".ssh/id_key").display()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("a secret folder in the home directory"),
        "{shown}"
    );
    for path in [
        t.project.join("out/new.txt"),
        t.project.join("../outside/new.txt"),
        t.project.join("../new.txt"),
        t.project.join("keys/../x.txt"),
        t.project.clone().join(".."),
    ] {
        let d = p.check_write(&path).expect_err("a write outside the roots");
        assert_eq!(
            d.code(),
            "sandbox.write-outside-roots",
            "{}",
            d.render_plain()
        );
        assert!(
            d.render_plain().contains("the project root"),
            "{}",
            d.render_plain()
        );
    }
    assert_eq!(
        p.check_write(t.project.join("sub/../new.txt"))
            .expect("allowed"),
        t.project.join("new.txt")
    );
    assert_eq!(
        p.check_read(t.project.join("out/existing.txt"))
            .expect("allowed"),
        t.outside.join("existing.txt")
    );
}

/// Runs `script` confined in the project and reports whether it succeeded.
fn kernel_allows(conf: &Confinement, t: &Tree, script: &str) -> bool {
    let out = sh(conf, &t.project, script);
    let ok = out.status.success();
    if !ok {
        assert!(
            !out.stderr.is_empty(),
            "{script} failed without a message: {}",
            text(&out)
        );
    }
    ok
}

#[test]
fn in_process_checks_agree_with_the_kernel() {
    let t = Tree::new();
    let policy = t.policy(Network::Off);
    let conf = Confinement::prepare(&policy, Mode::BestEffort)
        .unwrap_or_else(|d| panic!("{}", d.render_plain()));
    if !conf.confines_filesystem() {
        assert!(
            conf.enforcement()
                .to_string()
                .contains("filesystem: NOT enforced"),
            "{}",
            conf.enforcement()
        );
        return;
    }
    for (rel, expect) in [
        ("../home/notes.txt", true),
        ("code.txt", true),
        ("out/existing.txt", true),
        ("../outside/existing.txt", true),
        ("../home/.ssh/id_key", false),
        ("keys/id_key", false),
        ("keys/../.ssh/id_key", false),
        ("../home/.config/smith-auth.json", false),
    ] {
        let in_process = policy.check_read(t.project.join(rel)).is_ok();
        let kernel = kernel_allows(&conf, &t, &format!("cat {rel} > /dev/null"));
        assert_eq!(in_process, expect, "in-process read of {rel}");
        assert_eq!(kernel, expect, "kernel read of {rel}");
    }
    for (rel, expect) in [
        ("new.txt", true),
        ("code.txt", true),
        ("keys/../../project/again.txt", true),
        ("out/new.txt", false),
        ("out/existing.txt", false),
        ("../outside/new.txt", false),
        ("../new.txt", false),
        ("keys/planted", false),
        ("keys/../x.txt", false),
        ("../home/.ssh/id_key", false),
    ] {
        let in_process = policy.check_write(t.project.join(rel)).is_ok();
        let kernel = kernel_allows(&conf, &t, &format!("echo x >> {rel}"));
        assert_eq!(in_process, expect, "in-process write of {rel}");
        assert_eq!(kernel, expect, "kernel write of {rel}");
    }
}

#[test]
fn a_write_root_holding_a_denied_path_is_split_the_same_way() {
    let t = Tree::new();
    std::fs::create_dir(t.home.join("docs")).expect("mkdir");
    // The home folder itself is the project: ~/.ssh inside it stays denied.
    let policy = Policy::builder()
        .project_root(&t.home)
        .home(&t.home)
        .build()
        .unwrap_or_else(|d| panic!("{}", d.render_plain()));
    let conf = Confinement::prepare(&policy, Mode::BestEffort)
        .unwrap_or_else(|d| panic!("{}", d.render_plain()));
    let d = policy
        .check_write(t.home.join("fresh.txt"))
        .expect_err("a new entry beside .ssh");
    assert_eq!(
        d.code(),
        "sandbox.write-beside-denied",
        "{}",
        d.render_plain()
    );
    assert!(policy.check_write(t.home.join("notes.txt")).is_ok());
    assert!(policy.check_write(t.home.join("docs/new.txt")).is_ok());
    // ~/.config holds the denied ~/.config/gcloud: no new entries there.
    let d = policy
        .check_write(t.home.join(".config/new.txt"))
        .expect_err("a new entry beside .config/gcloud");
    assert_eq!(
        d.code(),
        "sandbox.write-beside-denied",
        "{}",
        d.render_plain()
    );
    assert!(policy.check_read(t.home.join(".ssh/id_key")).is_err());
    if !conf.confines_filesystem() {
        return;
    }
    let run = |script: &str| {
        let out = sh(&conf, &t.home, script);
        out.status.success()
    };
    assert!(!run("echo x > fresh.txt"));
    assert!(run("echo x >> notes.txt"));
    assert!(run("echo x > docs/new.txt"));
    assert!(!run("echo x > .config/new.txt"));
    assert!(!run("cat .ssh/id_key"));
    assert!(!run("echo x > .ssh/planted"));
}

#[test]
fn a_missing_write_root_is_a_diagnostic() {
    let t = Tree::new();
    let d = Policy::builder()
        .project_root(t.base.join("missing"))
        .build()
        .expect_err("missing root");
    assert_eq!(d.code(), "sandbox.write-root-missing");
    assert!(d.render_plain().contains("missing"), "{}", d.render_plain());
}
