//! A small tree with a project, a fake home holding secrets, and a folder
//! outside every write root.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use smith_sandbox::{Confinement, Mode, Network, Policy, resolve};

pub struct Tree {
    _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub project: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
    pub auth: PathBuf,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = resolve(dir.path()).expect("resolve temp dir");
        let project = base.join("project");
        let home = base.join("home");
        let outside = base.join("outside");
        for d in [
            &project,
            &home.join(".ssh"),
            &home.join(".config"),
            &outside,
        ] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(home.join(".ssh/id_key"), "SECRET KEY\n").expect("write");
        std::fs::write(home.join("notes.txt"), "ordinary notes\n").expect("write");
        std::fs::write(outside.join("existing.txt"), "outside\n").expect("write");
        std::fs::write(project.join("code.txt"), "project code\n").expect("write");
        let auth = home.join(".config/smith-auth.json");
        std::fs::write(&auth, "{\"token\":\"t\"}\n").expect("write");
        std::os::unix::fs::symlink(home.join(".ssh"), project.join("keys")).expect("symlink");
        std::os::unix::fs::symlink(&outside, project.join("out")).expect("symlink");
        Tree {
            _dir: dir,
            base,
            project,
            home,
            outside,
            auth,
        }
    }

    pub fn policy(&self, network: Network) -> Policy {
        Policy::builder()
            .project_root(&self.project)
            .home(&self.home)
            .auth_store(&self.auth)
            .network(network)
            .build()
            .unwrap_or_else(|d| panic!("{}", d.render_plain()))
    }

    pub fn confinement(&self, network: Network) -> Confinement {
        Confinement::prepare(&self.policy(network), Mode::BestEffort)
            .unwrap_or_else(|d| panic!("{}", d.render_plain()))
    }
}

/// Runs `sh -c script` in `cwd` under `conf`.
pub fn sh(conf: &Confinement, cwd: &Path, script: &str) -> Output {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(script).current_dir(cwd);
    conf.apply(&mut cmd);
    cmd.output().expect("spawn a confined sh")
}

pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
