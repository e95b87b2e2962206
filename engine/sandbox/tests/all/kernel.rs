//! Confined `sh -c` and `bash -c` on the running kernel. Where the kernel
//! lacks a layer, each test asserts the report says so instead.

use std::io::Read as _;
use std::net::{TcpListener, UdpSocket};
use std::process::Command;
use std::time::Duration;

use smith_sandbox::{Confinement, Coverage, Mode, NamespaceKind, Network, Support};

use crate::fixture::{Tree, sh, text};

/// `Some(conf)` when the layer named `layer` is enforced here; otherwise
/// asserts the report gives the reason and returns `None`.
fn enforced(conf: &Confinement, layer: &str) -> bool {
    let l = conf
        .enforcement()
        .layer(layer)
        .unwrap_or_else(|| panic!("no {layer} layer in\n{}", conf.enforcement()));
    match &l.coverage {
        Coverage::Enforced | Coverage::Partial(_) => true,
        Coverage::Unavailable(why) => {
            assert!(!why.is_empty());
            assert!(
                conf.enforcement().to_string().contains("NOT enforced"),
                "{}",
                conf.enforcement()
            );
            eprintln!("{layer} is not enforced on this kernel: {why}");
            false
        }
        Coverage::NotRequested => panic!("{layer} not requested"),
    }
}

#[test]
fn allowed_work_succeeds() {
    let t = Tree::new();
    let conf = t.confinement(Network::Off);
    let out = sh(
        &conf,
        &t.project,
        "echo made > made.txt && mkdir sub && echo deep > sub/deep.txt && rm code.txt \
         && cat ../home/notes.txt && ls / > /dev/null && /bin/true && uname -r > /dev/null \
         && echo to-null > /dev/null",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ordinary notes\n");
    assert_eq!(
        std::fs::read_to_string(t.project.join("made.txt")).expect("read"),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(t.project.join("sub/deep.txt")).expect("read"),
        "deep\n"
    );
    assert!(!t.project.join("code.txt").exists());
}

#[test]
fn writes_outside_the_write_roots_are_refused() {
    let t = Tree::new();
    let conf = t.confinement(Network::Off);
    if !enforced(&conf, "filesystem") {
        return;
    }
    for script in [
        "echo x > ../outside/new.txt",
        "echo x > out/new.txt",
        "echo x >> ../outside/existing.txt",
        "rm ../outside/existing.txt",
        "mkdir ../outside/dir",
        "echo x > ../new-beside.txt",
        "echo x > ../home/.ssh/planted",
    ] {
        let out = sh(&conf, &t.project, script);
        assert!(!out.status.success(), "{script} succeeded: {}", text(&out));
    }
    assert!(!t.outside.join("new.txt").exists());
    assert!(!t.outside.join("dir").exists());
    assert!(!t.base.join("new-beside.txt").exists());
    assert!(!t.home.join(".ssh/planted").exists());
    assert_eq!(
        std::fs::read_to_string(t.outside.join("existing.txt")).expect("read"),
        "outside\n"
    );
}

#[test]
fn denied_paths_cannot_be_read_by_any_route() {
    let t = Tree::new();
    let conf = t.confinement(Network::Off);
    if !enforced(&conf, "filesystem") {
        return;
    }
    for script in [
        "cat ../home/.ssh/id_key",
        "cat keys/id_key",
        "cat ./sub/../../home/.ssh/id_key",
        "cat ../home/.config/smith-auth.json",
        "cp ../home/.ssh/id_key stolen",
        "ln -s ../home/.ssh/id_key link && cat link",
    ] {
        let out = sh(&conf, &t.project, script);
        assert!(!out.status.success(), "{script} succeeded: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("SECRET"), "{script} leaked: {stdout}");
        assert!(!stdout.contains("token"), "{script} leaked: {stdout}");
    }
    // The same cat works unconfined: the refusal is the sandbox's.
    let out = Command::new("/bin/sh")
        .args(["-c", "cat ../home/.ssh/id_key"])
        .current_dir(&t.project)
        .output()
        .expect("spawn");
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn descendants_inherit_the_confinement() {
    let t = Tree::new();
    let conf = t.confinement(Network::Off);
    if !enforced(&conf, "filesystem") {
        return;
    }
    let out = sh(
        &conf,
        &t.project,
        "sh -c 'sh -c \"cat ../home/.ssh/id_key\"' ; sh -c 'echo x > ../outside/grandchild.txt'; exit 0",
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET"));
    assert!(!t.outside.join("grandchild.txt").exists());
}

fn bash_tcp(conf: &Confinement, cwd: &std::path::Path, port: u16) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("echo hello > /dev/tcp/127.0.0.1/{port}"))
        .current_dir(cwd);
    conf.apply(&mut cmd);
    cmd.output().expect("spawn bash")
}

#[test]
fn network_off_cuts_tcp_to_a_local_listener() {
    let t = Tree::new();
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");

    let off = t.confinement(Network::Off);
    let net = enforced(&off, "network");
    let tcp = enforced(&off, "tcp");
    if net || tcp {
        let out = bash_tcp(&off, &t.project, port);
        assert!(!out.status.success(), "connect succeeded: {}", text(&out));
        assert!(listener.accept().is_err(), "the listener got a connection");
    }

    // Control: with the network on, the same command reaches the listener.
    let on = t.confinement(Network::On);
    let out = bash_tcp(&on, &t.project, port);
    assert!(out.status.success(), "{}", text(&out));
    listener.set_nonblocking(false).expect("blocking");
    let (mut stream, _) = listener.accept().expect("accept");
    let mut got = String::new();
    stream.read_to_string(&mut got).expect("read");
    assert_eq!(got, "hello\n");
}

#[test]
fn network_off_cuts_udp_too() {
    let t = Tree::new();
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let port = socket.local_addr().expect("addr").port();
    let off = t.confinement(Network::Off);
    let script = format!("echo datagram > /dev/udp/127.0.0.1/{port}");
    if enforced(&off, "network") {
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(&script).current_dir(&t.project);
        off.apply(&mut cmd);
        let out = cmd.output().expect("spawn");
        assert!(!out.status.success(), "send succeeded: {}", text(&out));
        let mut buf = [0u8; 64];
        assert!(socket.recv(&mut buf).is_err(), "a datagram arrived");
    } else {
        // Without the namespace the report says UDP is not cut.
        let support = Support::probe();
        assert!(support.network_namespace.is_err());
    }
}

/// The kernel's own support with the network namespace taken away or
/// swapped for the user-namespace route, to exercise each layer alone.
fn support_with(ns: Result<NamespaceKind, String>) -> Support {
    Support {
        landlock_abi: Support::probe().landlock_abi.clone(),
        network_namespace: ns,
    }
}

#[test]
fn landlock_tcp_rules_alone_refuse_tcp_and_the_report_says_udp_passes() {
    let t = Tree::new();
    let policy = t.policy(Network::Off);
    let support = support_with(Err("taken away for this test".into()));
    let conf = Confinement::prepare_with(&policy, Mode::BestEffort, &support)
        .unwrap_or_else(|d| panic!("{}", d.render_plain()));
    assert!(!conf.isolates_network());
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    if enforced(&conf, "tcp") {
        let out = bash_tcp(&conf, &t.project, port);
        assert!(!out.status.success(), "connect succeeded: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "{}",
            text(&out)
        );
        assert!(listener.accept().is_err(), "the listener got a connection");
    }
    // Without the namespace, UDP is cut only from Landlock ABI 10 on; the
    // report must say which, and the datagram must agree with it.
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let port = socket.local_addr().expect("addr").port();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("echo datagram > /dev/udp/127.0.0.1/{port}"))
        .current_dir(&t.project);
    conf.apply(&mut cmd);
    cmd.output().expect("spawn");
    let mut buf = [0u8; 64];
    let arrived = socket.recv(&mut buf).is_ok();
    let udp_cut = matches!(
        conf.enforcement().layer("udp").map(|l| &l.coverage),
        Some(Coverage::Enforced)
    );
    assert_eq!(arrived, !udp_cut, "{}", conf.enforcement());
    assert!(
        conf.enforcement()
            .to_string()
            .contains("network: NOT enforced (no network namespace can be made: taken away"),
        "{}",
        conf.enforcement()
    );
}

#[test]
fn the_user_namespace_route_confines_too() {
    let t = Tree::new();
    let support = support_with(Ok(NamespaceKind::UserNamespace));
    if let Err(why) = &Support::probe().network_namespace {
        // No namespaces here at all: the report says so.
        assert!(!why.is_empty());
        return;
    }
    let conf = Confinement::prepare_with(&t.policy(Network::Off), Mode::Strict, &support)
        .unwrap_or_else(|d| panic!("{}", d.render_plain()));
    assert!(conf.isolates_network());
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let out = sh(
        &conf,
        &t.project,
        "id -u > uid.txt && readlink /proc/self/ns/user /proc/self/ns/net",
    );
    assert!(out.status.success(), "{}", text(&out));
    let inside = String::from_utf8_lossy(&out.stdout).into_owned();
    for ns in ["user", "net"] {
        let outside = std::fs::read_link(format!("/proc/self/ns/{ns}")).expect("readlink");
        assert!(
            !inside.contains(&outside.display().to_string()),
            "the child shares our {ns} namespace: {inside}"
        );
    }
    let uid = std::fs::read_to_string(t.project.join("uid.txt")).expect("read");
    // SAFETY: a plain getter.
    let me = unsafe { libc::geteuid() };
    assert_eq!(uid.trim(), me.to_string(), "the user maps to itself");
    let out = bash_tcp(&conf, &t.project, port);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(listener.accept().is_err());
    let out = sh(&conf, &t.project, "cat ../home/.ssh/id_key");
    assert!(!out.status.success(), "{}", text(&out));
}

/// Landlock keeps a confined process out of the memory and environment
/// of processes outside its domain (where an API key may live). The kernel
/// lets a tracer with `CAP_SYS_PTRACE` through, so when the suite runs as
/// root both sides run as `nobody`, as an unprivileged smith would.
#[test]
fn other_processes_memory_and_environment_are_out_of_reach() {
    use std::os::unix::process::CommandExt as _;
    let t = Tree::new();
    let conf = t.confinement(Network::On);
    if !enforced(&conf, "filesystem") {
        return;
    }
    // SAFETY: a plain getter.
    let root = unsafe { libc::geteuid() } == 0;
    let as_user = |cmd: &mut Command| {
        if root {
            cmd.uid(65534).gid(65534);
        }
    };
    let mut sleeper = Command::new("sleep");
    sleeper.arg("30").env("SMITH_TEST_SECRET", "s3cr3t");
    as_user(&mut sleeper);
    let mut sleeper = sleeper.spawn().expect("spawn sleep");
    let pid = sleeper.id();
    let read = |confined: bool, file: &str| {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", &format!("cat /proc/{pid}/{file}")])
            .current_dir("/");
        as_user(&mut cmd);
        if confined {
            conf.apply(&mut cmd);
        }
        cmd.output().expect("spawn")
    };
    let unconfined = read(false, "environ");
    let confined_env = read(true, "environ");
    let confined_mem = read(true, "mem");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(
        String::from_utf8_lossy(&unconfined.stdout).contains("s3cr3t"),
        "{}",
        text(&unconfined)
    );
    for out in [confined_env, confined_mem] {
        assert!(!out.status.success(), "{}", text(&out));
        assert!(out.stdout.is_empty(), "{}", text(&out));
    }
}
