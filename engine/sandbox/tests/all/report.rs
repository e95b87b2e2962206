//! The support report and strict mode.

use smith_sandbox::{Confinement, Coverage, Mode, NamespaceKind, Network, Support};

use crate::fixture::Tree;

#[test]
fn the_report_names_this_kernel() {
    let support = Support::probe();
    let shown = support.to_string();
    match &support.landlock_abi {
        Ok(abi) => assert!(shown.contains(&format!("landlock: ABI {abi}")), "{shown}"),
        Err(why) => assert!(shown.contains(why.as_str()), "{shown}"),
    }
    assert!(shown.contains("network namespace: "), "{shown}");
    let t = Tree::new();
    let e = support.enforcement(&t.policy(Network::Off));
    let names: Vec<&str> = e.layers.iter().map(|l| l.name).collect();
    assert_eq!(
        names,
        [
            "filesystem",
            "network",
            "tcp",
            "udp",
            "abstract-unix",
            "unix-path"
        ]
    );
    let e_on = support.enforcement(&t.policy(Network::On));
    assert_eq!(
        e_on.layer("network").map(|l| &l.coverage),
        Some(&Coverage::NotRequested)
    );
    // The rules per ABI version.
    let abi = support.abi();
    let tcp = &e.layer("tcp").expect("tcp").coverage;
    assert_eq!(matches!(tcp, Coverage::Enforced), abi >= 4, "{e}");
    let udp = &e.layer("udp").expect("udp").coverage;
    assert_eq!(matches!(udp, Coverage::Enforced), abi >= 10, "{e}");
    if abi < 10 {
        assert!(e.to_string().contains("udp: NOT enforced"), "{e}");
    }
}

#[test]
fn strict_mode_refuses_without_a_layer_and_best_effort_says_why() {
    let t = Tree::new();
    let policy = t.policy(Network::Off);
    let lacking = Support {
        landlock_abi: Err("the kernel was built without Landlock (ENOSYS)".into()),
        network_namespace: Err("unshare(CLONE_NEWNET) failed: Operation not permitted".into()),
    };
    let d = Confinement::prepare_with(&policy, Mode::Strict, &lacking).expect_err("strict");
    assert_eq!(d.code(), "sandbox.unconfined");
    let shown = d.render_plain();
    assert!(shown.contains("without Landlock"), "{shown}");
    assert!(shown.contains("CLONE_NEWNET"), "{shown}");

    let c = Confinement::prepare_with(&policy, Mode::BestEffort, &lacking)
        .unwrap_or_else(|d| panic!("{}", d.render_plain()));
    assert!(!c.confines_filesystem());
    assert!(!c.isolates_network());
    let shown = c.enforcement().to_string();
    assert!(
        shown.contains("filesystem: NOT enforced (Landlock is unavailable"),
        "{shown}"
    );
    assert!(shown.contains("network: NOT enforced"), "{shown}");

    // Landlock without the namespace: strict still refuses a network-off
    // policy, and accepts a network-on one.
    let half = Support {
        landlock_abi: Ok(4),
        network_namespace: Err("no user namespaces".into()),
    };
    let d = Confinement::prepare_with(&policy, Mode::Strict, &half).expect_err("strict");
    assert!(d.render_plain().contains("no user namespaces"));
    Confinement::prepare_with(&t.policy(Network::On), Mode::Strict, &half)
        .unwrap_or_else(|d| panic!("{}", d.render_plain()));
    let e = half.enforcement(&policy);
    assert!(matches!(
        e.layer("tcp").map(|l| &l.coverage),
        Some(Coverage::Enforced)
    ));
    assert!(matches!(
        e.layer("filesystem").map(|l| &l.coverage),
        Some(Coverage::Partial(_))
    ));
}

#[test]
fn strict_mode_on_this_kernel_matches_the_report() {
    let t = Tree::new();
    let policy = t.policy(Network::Off);
    let support = Support::probe();
    let strict = Confinement::prepare(&policy, Mode::Strict);
    match support.enforcement(&policy).strict_refusal() {
        None => {
            let c = strict.unwrap_or_else(|d| panic!("{}", d.render_plain()));
            assert!(c.confines_filesystem());
            assert!(c.isolates_network());
            assert!(matches!(
                support.network_namespace,
                Ok(NamespaceKind::Privileged | NamespaceKind::UserNamespace)
            ));
        }
        Some(why) => {
            let d = strict.expect_err("strict refuses");
            assert!(d.render_plain().contains(&why), "{}", d.render_plain());
        }
    }
}
