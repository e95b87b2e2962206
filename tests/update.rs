//! `smith update` end to end: a copy of the built smith, installed in a
//! folder of its own, updates itself from a local HTTP server that serves a
//! release made the way `scripts/release` makes one (a stripped binary in a
//! tar.gz, `sha256sum` output, a signature by a throwaway key the user's
//! configuration trusts). The good release is swapped in with the previous
//! binary kept and a rollback restores it; a bad checksum, a bad signature,
//! a truncated download, a folder smith cannot write, a killed update and a
//! development build all leave the installed binary as it was.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

const NEW: &str = "0.2.0";
const TARGET: &str = target();

/// The archive a Linux smith installs: the static musl build of its
/// architecture, which releases publish, whichever C library the smith
/// under test was built with (a glibc build, as a rule, updating to it).
const fn target() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "aarch64-unknown-linux-musl"
    } else {
        "x86_64-unknown-linux-musl"
    }
}

fn archive_name() -> String {
    format!("smith-{NEW}-{TARGET}.tar.gz")
}

/// How the server answers one path.
#[derive(Clone)]
enum Reply {
    /// The whole file.
    Full(Vec<u8>),
    /// A `Content-Length` of the whole file, then half of it, then the
    /// connection closes.
    Truncated(Vec<u8>),
    /// The first 64 KiB, a signal on the channel, then a stall of a minute.
    Stall(Vec<u8>, mpsc::Sender<()>),
}

/// A local HTTP/1.1 server: a thread per connection, `Connection: close`.
struct Server {
    port: u16,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(routes: HashMap<String, Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes = Arc::new(Mutex::new(routes));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (r, s) = (routes.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (r, s) = (r.clone(), s.clone());
                std::thread::spawn(move || serve(stream, &r, &s));
            }
        });
        Server { port, routes, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/releases", self.port)
    }

    fn set(&self, path: &str, reply: Reply) {
        self.routes.lock().unwrap().insert(path.to_owned(), reply);
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, routes: &Mutex<HashMap<String, Reply>>, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
    }
    seen.lock().unwrap().push(path.clone());
    let reply = routes.lock().unwrap().get(&path).cloned();
    let mut out = stream;
    let head = |len: usize| {
        format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
    };
    let _ = match reply {
        None => out
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
        Some(Reply::Full(body)) => out
            .write_all(head(body.len()).as_bytes())
            .and_then(|()| out.write_all(&body)),
        Some(Reply::Truncated(body)) => out
            .write_all(head(body.len()).as_bytes())
            .and_then(|()| out.write_all(&body[..body.len() / 2])),
        Some(Reply::Stall(body, signal)) => {
            let sent = out
                .write_all(head(body.len()).as_bytes())
                .and_then(|()| out.write_all(&body[..65536]))
                .and_then(|()| out.flush());
            let _ = signal.send(());
            std::thread::sleep(Duration::from_secs(60));
            sent
        }
    };
}

/// What every test shares, made once: a throwaway key pair, and the
/// release: the stripped binary, its archive, SHA256SUMS and the signature.
struct Fixture {
    _dir: tempfile::TempDir,
    public_hex: String,
    secret: PathBuf,
    binary: Vec<u8>,
    archive: Vec<u8>,
    sums: Vec<u8>,
    signature: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (secret, public) = (d.join("throwaway.key"), d.join("throwaway.pub"));
        let out = release_cmd(&["keygen", "--secret"], &secret, &["--public"], &public);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let public_hex = key_line(&std::fs::read_to_string(&public).unwrap());
        // The release binary: the built smith, stripped as scripts/release
        // strips it (it still runs, and its bytes differ from the original).
        let stem = format!("smith-{NEW}-{TARGET}");
        std::fs::create_dir(d.join(&stem)).unwrap();
        let bin = d.join(&stem).join("smith");
        check(
            Command::new("objcopy")
                .args(["--strip-all", env!("CARGO_BIN_EXE_smith")])
                .arg(&bin),
        );
        check(
            Command::new("tar")
                .current_dir(d)
                .args([
                    "--sort=name",
                    "--owner=0",
                    "--group=0",
                    "--numeric-owner",
                    "-czf",
                ])
                .arg(archive_name())
                .arg(&stem),
        );
        check(
            Command::new("sh")
                .current_dir(d)
                .arg("-c")
                .arg(format!("sha256sum {} > SHA256SUMS", archive_name())),
        );
        let out = release_cmd(&["sign", "--key"], &secret, &[], &d.join("SHA256SUMS"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Fixture {
            public_hex,
            binary: std::fs::read(&bin).unwrap(),
            archive: std::fs::read(d.join(archive_name())).unwrap(),
            sums: std::fs::read(d.join("SHA256SUMS")).unwrap(),
            signature: std::fs::read(d.join("SHA256SUMS.sig")).unwrap(),
            secret,
            _dir: dir,
        }
    })
}

fn check(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn release_cmd(a: &[&str], p: &Path, b: &[&str], q: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smith"))
        .arg("release-tool")
        .args(a)
        .arg(p)
        .args(b)
        .arg(q)
        .output()
        .unwrap()
}

fn key_line(text: &str) -> String {
    text.lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap()
        .trim()
        .to_owned()
}

/// The routes of a good release.
fn good_routes() -> HashMap<String, Reply> {
    let f = fixture();
    HashMap::from([
        (
            "/releases/latest".to_owned(),
            Reply::Full(format!("{NEW}\n").into_bytes()),
        ),
        (
            format!("/releases/{NEW}/SHA256SUMS"),
            Reply::Full(f.sums.clone()),
        ),
        (
            format!("/releases/{NEW}/SHA256SUMS.sig"),
            Reply::Full(f.signature.clone()),
        ),
        (
            format!("/releases/{NEW}/{}", archive_name()),
            Reply::Full(f.archive.clone()),
        ),
    ])
}

/// An installed smith: a copy of the built binary in `ROOT/bin`, with
/// `ROOT/home` as its home, whose user configuration trusts the throwaway
/// key.
struct Installed {
    root: tempfile::TempDir,
    original: Vec<u8>,
}

impl Installed {
    fn new() -> Installed {
        Installed::trusting(true)
    }

    /// With `trust`, the user configuration trusts the throwaway key.
    fn trusting(trust: bool) -> Installed {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("bin")).unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        let original = std::fs::read(env!("CARGO_BIN_EXE_smith")).unwrap();
        let exe = root.path().join("bin/smith");
        std::fs::write(&exe, &original).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let installed = Installed { root, original };
        if !trust {
            return installed;
        }
        let out = installed.run(
            None,
            &[
                "config",
                "set",
                "update.trusted-keys",
                &fixture().public_hex,
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        installed
    }

    fn exe(&self) -> PathBuf {
        self.root.path().join("bin/smith")
    }

    fn previous(&self) -> PathBuf {
        self.root.path().join("bin/smith.previous")
    }

    fn command(&self, url: Option<&str>, args: &[&str]) -> Command {
        let home = self.root.path().join("home");
        let mut cmd = Command::new(self.exe());
        cmd.args(args)
            .env("SMITH_HOME", &home)
            .env("HOME", &home)
            .env("NO_COLOR", "1")
            .env_remove("SMITH_UPDATE_URL")
            .env_remove("SMITH_UPDATE_TRUSTED_KEYS")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .current_dir(&home);
        if let Some(url) = url {
            cmd.env("SMITH_UPDATE_URL", url);
        }
        cmd
    }

    fn run(&self, url: Option<&str>, args: &[&str]) -> Output {
        output(&mut self.command(url, args))
    }

    /// The installed binary is the original, with nothing beside it.
    fn assert_untouched(&self) {
        assert!(
            std::fs::read(self.exe()).unwrap() == self.original,
            "the installed binary changed"
        );
        let mut names: Vec<String> = std::fs::read_dir(self.root.path().join("bin"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["smith"]);
    }
}

/// Runs `cmd`. The installed copy was just written, and a test thread
/// that forks while another writes a binary holds the writing descriptor
/// until it execs: exec then fails with ETXTBSY for a moment, so retry.
fn output(cmd: &mut Command) -> Output {
    for _ in 0..100 {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(20));
            }
            result => return result.unwrap(),
        }
    }
    panic!("{cmd:?} stayed busy (ETXTBSY) for 2 s");
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_good_release_is_swapped_in_the_previous_kept_and_rollback_restores_it() {
    let server = Server::start(good_routes());
    let smith = Installed::new();
    let f = fixture();

    let out = smith.run(Some(&server.url()), &["update", "--check"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("smith {NEW} is available")),
        "{stdout}"
    );
    smith.assert_untouched();

    let out = smith.run(Some(&server.url()), &["update"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("updated smith 0.1.0 to {NEW}")),
        "{stdout}"
    );
    assert_eq!(
        server.seen().last().map(String::as_str),
        Some(format!("/releases/{NEW}/{}", archive_name()).as_str()),
        "the archive downloaded is the musl one of this architecture"
    );
    assert!(
        std::fs::read(smith.exe()).unwrap() == f.binary,
        "the release binary is installed"
    );
    assert!(
        std::fs::read(smith.previous()).unwrap() == smith.original,
        "the old one is kept"
    );
    assert_eq!(
        std::fs::metadata(smith.exe()).unwrap().permissions().mode() & 0o777,
        0o755
    );
    // The installed release runs.
    let out = smith.run(None, &["--version"]);
    assert_eq!(text(&out).0.trim(), "smith 0.1.0");

    let out = smith.run(None, &["update", "--rollback"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        std::fs::read(smith.exe()).unwrap() == smith.original,
        "rollback restores the old binary"
    );
    assert!(
        std::fs::read(smith.previous()).unwrap() == f.binary,
        "and keeps the release"
    );
}

#[test]
fn a_current_version_is_up_to_date_and_nothing_is_downloaded() {
    let mut routes = good_routes();
    routes.insert(
        "/releases/latest".to_owned(),
        Reply::Full(b"0.1.0\n".to_vec()),
    );
    let server = Server::start(routes);
    let smith = Installed::new();
    let out = smith.run(Some(&server.url()), &["update"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("smith 0.1.0 is up to date"), "{stdout}");
    assert_eq!(server.seen(), ["/releases/latest"]);
    smith.assert_untouched();
}

#[test]
fn an_archive_that_does_not_match_its_signed_checksum_is_not_installed() {
    let server = Server::start(good_routes());
    let mut archive = fixture().archive.clone();
    let last = archive.len() - 1;
    archive[last] ^= 0xff;
    let path = format!("/releases/{NEW}/{}", archive_name());
    server.set(&path, Reply::Full(archive));
    let smith = Installed::new();
    let out = smith.run(Some(&server.url()), &["update"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}{path}",
            server.url().trim_end_matches("/releases")
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("but the signed SHA256SUMS says"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    smith.assert_untouched();
}

#[test]
fn a_bad_signature_or_an_untrusted_key_is_refused() {
    let f = fixture();
    // SHA256SUMS changed after it was signed.
    let server = Server::start(good_routes());
    let mut sums = f.sums.clone();
    sums.extend_from_slice(format!("{}  extra.tar.gz\n", "0".repeat(64)).as_bytes());
    server.set(&format!("/releases/{NEW}/SHA256SUMS"), Reply::Full(sums));
    let smith = Installed::new();
    let out = smith.run(Some(&server.url()), &["update"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("{NEW}/SHA256SUMS.sig does not match")),
        "{stderr}"
    );
    assert!(stderr.contains("do not install this release"), "{stderr}");
    smith.assert_untouched();
    assert!(
        !server.seen().iter().any(|p| p.ends_with(".tar.gz")),
        "no archive is downloaded for a bad signature: {:?}",
        server.seen()
    );

    // A signature by the throwaway key, which only a variable trusts: the
    // variable is ignored with a warning, and the signature is refused.
    let server = Server::start(good_routes());
    let smith = Installed::trusting(false);
    let out = output(
        smith
            .command(Some(&server.url()), &["update"])
            .env("SMITH_UPDATE_TRUSTED_KEYS", &f.public_hex),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "update.trusted-keys from environment variable SMITH_UPDATE_TRUSTED_KEYS is ignored"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("does not match"), "{stderr}");
    smith.assert_untouched();
}

#[test]
fn a_truncated_download_is_not_installed() {
    let server = Server::start(good_routes());
    let path = format!("/releases/{NEW}/{}", archive_name());
    server.set(&path, Reply::Truncated(fixture().archive.clone()));
    let smith = Installed::new();
    let out = smith.run(Some(&server.url()), &["update"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("the download of {}", server.url())),
        "{stderr}"
    );
    assert!(stderr.contains("did not complete"), "{stderr}");
    smith.assert_untouched();
}

#[test]
fn a_folder_smith_cannot_write_is_refused_with_what_to_run() {
    let server = Server::start(good_routes());
    let smith = Installed::new();
    let bin = smith.root.path().join("bin");
    let mut cmd = smith.command(Some(&server.url()), &["update"]);
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        // Root may write anywhere: run as `nobody`, who may read and run
        // the binary and read its home but not write the folder.
        for dir in [smith.root.path(), &bin] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let home = smith.root.path().join("home");
        chown_tree(&home, 65534);
        cmd.uid(65534).gid(65534);
    } else {
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let out = output(&mut cmd);
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("its folder {} is not writable", bin.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("sudo {} update", smith.exe().display())),
        "{stderr}"
    );
    assert!(
        server.seen().is_empty(),
        "nothing is downloaded: {:?}",
        server.seen()
    );
    smith.assert_untouched();
}

fn chown_tree(path: &Path, id: u32) {
    std::os::unix::fs::chown(path, Some(id), Some(id)).unwrap();
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path(), id);
        }
    }
}

#[test]
fn an_update_killed_midway_leaves_the_old_binary_and_a_rerun_succeeds() {
    let f = fixture();
    let server = Server::start(good_routes());
    let path = format!("/releases/{NEW}/{}", archive_name());
    let (tx, rx) = mpsc::channel();
    server.set(&path, Reply::Stall(f.archive.clone(), tx));
    let smith = Installed::new();
    let mut command = smith.command(Some(&server.url()), &["update"]);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = loop {
        match command.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(20));
            }
            result => break result.unwrap(),
        }
    };
    rx.recv_timeout(Duration::from_secs(60)).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    smith.assert_untouched();

    // What a run killed during the swap leaves: the new binary half
    // written under its temporary name, and a link being made to keep the
    // old one. The installed binary is still the old one, and the next run
    // clears both and succeeds.
    let bin = smith.root.path().join("bin");
    std::fs::write(bin.join(".smith.update-new"), &f.binary[..1000]).unwrap();
    std::fs::hard_link(smith.exe(), bin.join(".smith.update-keep")).unwrap();
    assert!(std::fs::read(smith.exe()).unwrap() == smith.original);
    server.set(&path, Reply::Full(f.archive.clone()));
    let out = smith.run(Some(&server.url()), &["update"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("left by an interrupted update"), "{stdout}");
    assert!(std::fs::read(smith.exe()).unwrap() == f.binary);
    assert!(std::fs::read(smith.previous()).unwrap() == smith.original);
    assert!(!bin.join(".smith.update-new").exists() && !bin.join(".smith.update-keep").exists());
}

#[test]
fn a_development_build_is_refused_before_anything_is_downloaded() {
    let server = Server::start(good_routes());
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["update"])
        .env("SMITH_HOME", home.path())
        .env("NO_COLOR", "1")
        .env("SMITH_UPDATE_URL", server.url())
        .current_dir(home.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}{stderr}");
    assert!(stderr.contains("is a development build"), "{stderr}");
    assert!(
        stderr.contains("git pull && cargo build --release"),
        "{stderr}"
    );
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    // --check only reports, from anywhere.
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["update", "--check"])
        .env("SMITH_HOME", home.path())
        .env("SMITH_UPDATE_URL", server.url())
        .current_dir(home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out).1);
}

#[test]
fn update_followed_by_words_is_a_prompt_not_an_update() {
    let server = Server::start(good_routes());
    let smith = Installed::new();
    std::fs::write(smith.root.path().join("home/README.md"), "# readme\n").unwrap();
    let out = smith.run(Some(&server.url()), &["update", "the", "readme"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        !stdout.is_empty(),
        "the scripted provider answered the prompt"
    );
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    smith.assert_untouched();
}

#[test]
fn without_update_url_smith_says_what_to_set() {
    let smith = Installed::new();
    let out = smith.run(None, &["update"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("update.url is not set"), "{stderr}");
    assert!(stderr.contains("smith config set update.url"), "{stderr}");
    smith.assert_untouched();
}

#[test]
fn release_verify_checks_a_release_folder_with_an_extra_key() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        (archive_name(), &f.archive),
        ("SHA256SUMS".to_owned(), &f.sums),
        ("SHA256SUMS.sig".to_owned(), &f.signature),
    ] {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let public = dir.path().join("k.pub");
    std::fs::write(&public, format!("{}\n", f.public_hex)).unwrap();
    let verify = |extra: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
        cmd.args(["release-tool", "verify"]).arg(dir.path());
        if extra {
            cmd.arg("--key").arg(&public);
        }
        cmd.output().unwrap()
    };
    let out = verify(true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert!(text(&out).0.contains("1 files match"), "{}", text(&out).0);
    // Only the compiled-in key: the throwaway signature is refused.
    let out = verify(false);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("does not match"), "{}", text(&out).1);
    // One archive downloaded of the two listed: verified with
    // --ignore-missing, refused without.
    std::fs::write(
        dir.path().join("SHA256SUMS"),
        [
            f.sums.as_slice(),
            format!("{}  other.tar.gz\n", "0".repeat(64)).as_bytes(),
        ]
        .concat(),
    )
    .unwrap();
    let sign = release_cmd(
        &["sign", "--key"],
        &f.secret,
        &[],
        &dir.path().join("SHA256SUMS"),
    );
    assert!(sign.status.success(), "{}", text(&sign).1);
    let out = verify(true);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("other.tar.gz cannot be read"),
        "{}",
        text(&out).1
    );
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["release-tool", "verify", "--ignore-missing", "--key"])
        .arg(&public)
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    // The secret key never shows in any output.
    let secret = key_line(&std::fs::read_to_string(&f.secret).unwrap());
    for out in [verify(true), verify(false)] {
        let (o, e) = text(&out);
        assert!(!o.contains(&secret) && !e.contains(&secret));
    }
}
