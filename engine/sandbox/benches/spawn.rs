//! What the sandbox adds to a spawned command: `true` spawned and waited
//! for without it (with and without a `pre_exec` hook), with a prepared
//! confinement (filesystem only, and with the network namespace), and the
//! cost of preparing one.

use std::path::PathBuf;
use std::process::Command;

use smith_sandbox::{Confinement, Mode, Network, Policy};

fn main() {
    divan::main();
}

struct Fixture {
    _dir: tempfile::TempDir,
    policy_on: Policy,
    policy_off: Policy,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    let build = |network| {
        Policy::builder()
            .project_root(dir.path())
            .home(&home)
            .auth_store(home.join(".local/share/smith/auth.kdl"))
            .network(network)
            .build()
            .unwrap_or_else(|d| panic!("{}", d.render_plain()))
    };
    Fixture {
        policy_on: build(Network::On),
        policy_off: build(Network::Off),
        _dir: dir,
    }
}

fn run(cmd: &mut Command) {
    let status = cmd.status().expect("spawn true");
    assert!(status.success());
}

#[divan::bench]
fn spawn_plain(bencher: divan::Bencher<'_, '_>) {
    bencher.bench(|| run(&mut Command::new("/bin/true")));
}

/// The baseline the `bash` tool pays today: a `pre_exec` hook (it calls
/// `setsid`) makes the standard library fork instead of using
/// `posix_spawn`.
#[divan::bench]
fn spawn_plain_with_pre_exec(bencher: divan::Bencher<'_, '_>) {
    use std::os::unix::process::CommandExt as _;
    bencher.bench(|| {
        let mut cmd = Command::new("/bin/true");
        // SAFETY: the hook does nothing.
        unsafe {
            cmd.pre_exec(|| Ok(()));
        }
        run(&mut cmd);
    });
}

#[divan::bench]
fn spawn_confined_network_on(bencher: divan::Bencher<'_, '_>) {
    let f = fixture();
    let conf = Confinement::prepare(&f.policy_on, Mode::BestEffort).expect("prepare");
    bencher.bench(|| {
        let mut cmd = Command::new("/bin/true");
        conf.apply(&mut cmd);
        run(&mut cmd);
    });
}

#[divan::bench]
fn spawn_confined_network_off(bencher: divan::Bencher<'_, '_>) {
    let f = fixture();
    let conf = Confinement::prepare(&f.policy_off, Mode::BestEffort).expect("prepare");
    bencher.bench(|| {
        let mut cmd = Command::new("/bin/true");
        conf.apply(&mut cmd);
        run(&mut cmd);
    });
}

#[divan::bench]
fn prepare_network_off(bencher: divan::Bencher<'_, '_>) {
    let f = fixture();
    bencher.bench(|| Confinement::prepare(&f.policy_off, Mode::BestEffort).expect("prepare"));
}

#[divan::bench]
fn prepare_and_spawn_network_off(bencher: divan::Bencher<'_, '_>) {
    let f = fixture();
    bencher.bench(|| {
        let conf = Confinement::prepare(&f.policy_off, Mode::BestEffort).expect("prepare");
        let mut cmd = Command::new("/bin/true");
        conf.apply(&mut cmd);
        run(&mut cmd);
    });
}
