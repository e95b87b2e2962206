//! A shallow clone over git's smart HTTP protocol (version 2), through
//! smith's HTTP engine — no `git` executable: the capability
//! advertisement (`GET info/refs?service=git-upload-pack`), `ls-refs` to
//! find the commit, `fetch` with `deepen 1` for a packfile of that one
//! commit (pkt-lines, side-band 1/2/3), decoded by [`super::pack`] and
//! checked out into a [`Tree`].

use smith_diag::{Diagnostic, Surface};
use smith_net::{Client, Request};

use super::pack::{self, Oid};
use super::tree::Tree;

/// What a fetch checked out.
#[derive(Debug)]
pub struct Fetched {
    /// The commit, 40 hex digits.
    pub commit: String,
    /// The ref it came from (`HEAD`, `refs/heads/main`), or the id asked
    /// for.
    pub reference: String,
    /// Submodules left out.
    pub skipped: Vec<String>,
}

/// The server did not answer in the protocol.
pub fn protocol_error(origin: &str, why: String) -> Diagnostic {
    Diagnostic::error(
        "marketplace.git",
        format!("fetching the git repository {origin} failed"),
        why,
        "check that the address is a git repository served over HTTPS (smith speaks git's protocol version 2, which GitHub, GitLab and `git http-backend` serve); nothing was changed",
    )
    .with_surface(Surface::other(origin.to_owned()))
}

/// One pkt-line: data, or a flush (0000), delimiter (0001) or
/// response-end (0002).
#[derive(Debug, PartialEq, Eq)]
enum Pkt<'a> {
    Data(&'a [u8]),
    Flush,
    Delim,
    End,
}

/// Reads the pkt-lines of `bytes` one by one.
struct Pkts<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Pkts<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Pkts { bytes, at: 0 }
    }

    fn next(&mut self) -> Result<Option<Pkt<'a>>, String> {
        if self.at == self.bytes.len() {
            return Ok(None);
        }
        let head = self
            .bytes
            .get(self.at..self.at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or("a pkt-line length is not 4 hex digits")?;
        let pkt = match head {
            0 => Pkt::Flush,
            1 => Pkt::Delim,
            2 => Pkt::End,
            3 => return Err("a pkt-line has the length 3".to_owned()),
            n => Pkt::Data(
                self.bytes
                    .get(self.at + 4..self.at + n)
                    .ok_or("a pkt-line is cut short")?,
            ),
        };
        self.at += if head < 4 { 4 } else { head };
        Ok(Some(pkt))
    }
}

fn pkt(out: &mut Vec<u8>, line: &str) {
    out.extend_from_slice(format!("{:04x}", line.len() + 4).as_bytes());
    out.extend_from_slice(line.as_bytes());
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data)
        .trim_end_matches('\n')
        .to_owned()
}

fn post(client: &Client, url: &str, body: Vec<u8>, origin: &str) -> Result<Vec<u8>, Diagnostic> {
    super::http::fetch(client, url, origin, &|address| {
        Ok(Request::post(address, body.clone())?
            .with_header("content-type", "application/x-git-upload-pack-request")
            .with_header("accept", "application/x-git-upload-pack-result")
            .with_header("git-protocol", "version=2")
            .with_header("user-agent", "git/2.0 (smith)"))
    })
}

/// The commit to fetch: `want` (a branch, a tag or a commit id), else the
/// default branch (`HEAD`).
fn find_ref(
    client: &Client,
    base: &str,
    want: Option<&str>,
    origin: &str,
) -> Result<(Oid, String), Diagnostic> {
    if let Some(id) = want.and_then(pack::parse_hex) {
        return Ok((id, want.unwrap_or_default().to_owned()));
    }
    let mut body = Vec::new();
    pkt(&mut body, "command=ls-refs\n");
    body.extend_from_slice(b"0001");
    pkt(&mut body, "peel\n");
    pkt(&mut body, "symrefs\n");
    match want {
        Some(name) => {
            pkt(&mut body, &format!("ref-prefix refs/heads/{name}\n"));
            pkt(&mut body, &format!("ref-prefix refs/tags/{name}\n"));
            pkt(&mut body, &format!("ref-prefix {name}\n"));
        }
        None => pkt(&mut body, "ref-prefix HEAD\n"),
    }
    body.extend_from_slice(b"0000");
    let answer = post(client, &format!("{base}/git-upload-pack"), body, origin)?;
    let mut lines = Pkts::new(&answer);
    let mut refs = Vec::new();
    while let Some(line) = lines.next().map_err(|why| protocol_error(origin, why))? {
        let Pkt::Data(data) = line else { break };
        let line = text(data);
        if let Some(message) = line.strip_prefix("ERR ") {
            return Err(protocol_error(
                origin,
                format!("the server refused: {message}"),
            ));
        }
        let mut words = line.split(' ');
        let id = words.next().and_then(pack::parse_hex);
        let name = words.next().unwrap_or_default().to_owned();
        let peeled = words
            .find_map(|w| w.strip_prefix("peeled:"))
            .and_then(pack::parse_hex);
        if let Some(id) = peeled.or(id) {
            refs.push((name, id));
        }
    }
    let wanted = match want {
        Some(name) => [
            format!("refs/heads/{name}"),
            format!("refs/tags/{name}"),
            name.to_owned(),
        ]
        .into_iter()
        .find_map(|full| refs.iter().find(|(n, _)| *n == full).cloned()),
        None => refs.iter().find(|(n, _)| n == "HEAD").cloned(),
    };
    wanted.map(|(name, id)| (id, name)).ok_or_else(|| {
        Diagnostic::error(
            "marketplace.git-ref",
            match want {
                Some(name) => format!("the git repository {origin} has no branch or tag {name:?}"),
                None => format!("the git repository {origin} has no default branch (HEAD)"),
            },
            format!(
                "its refs are: {}",
                if refs.is_empty() {
                    "none (an empty repository)".to_owned()
                } else {
                    refs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                }
            ),
            "name a branch or tag the repository has (the marketplace entry's `ref`), or push a commit to it",
        )
        .with_surface(Surface::other(origin.to_owned()))
    })
}

/// The packfile the `fetch` answer carries (side-band 1), with the
/// server's error (band 3) as a diagnostic.
fn packfile(answer: &[u8], origin: &str) -> Result<Vec<u8>, Diagnostic> {
    let mut lines = Pkts::new(answer);
    let mut in_pack = false;
    let mut pack = Vec::new();
    while let Some(line) = lines.next().map_err(|why| protocol_error(origin, why))? {
        match line {
            Pkt::Data(data) if in_pack => match data.split_first() {
                Some((1, bytes)) => {
                    pack.extend_from_slice(bytes);
                    if pack.len() as u64 > super::tree::MAX_COMPRESSED {
                        return Err(super::tree::oversize(
                            origin,
                            "its packfile weighs more than 64 MiB",
                        ));
                    }
                }
                Some((2, _)) => {}
                Some((3, message)) => {
                    return Err(protocol_error(
                        origin,
                        format!("the server failed: {}", text(message)),
                    ));
                }
                _ => {
                    return Err(protocol_error(
                        origin,
                        "a packfile line has no side-band".to_owned(),
                    ));
                }
            },
            Pkt::Data(data) => {
                let line = text(data);
                if let Some(message) = line.strip_prefix("ERR ") {
                    return Err(protocol_error(
                        origin,
                        format!("the server refused: {message}"),
                    ));
                }
                if line == "packfile" {
                    in_pack = true;
                }
            }
            Pkt::Flush | Pkt::End if in_pack => break,
            Pkt::Flush | Pkt::Delim | Pkt::End => {}
        }
    }
    if !in_pack {
        return Err(protocol_error(
            origin,
            "its fetch answer holds no packfile section".to_owned(),
        ));
    }
    Ok(pack)
}

/// Fetches the commit `want` names (or the default branch) of the
/// repository at `url`, one commit deep, and checks out its tree — or its
/// folder `subdir` — into `tree`.
///
/// # Errors
///
/// A transport or protocol failure, a missing ref or folder, an unsafe
/// entry or a cap.
pub fn fetch(
    client: &Client,
    url: &str,
    want: Option<&str>,
    subdir: Option<&str>,
    tree: &mut Tree,
) -> Result<Fetched, Diagnostic> {
    let origin = tree.origin().to_owned();
    let base = url.trim_end_matches('/');
    let advert = super::http::fetch(
        client,
        &format!("{base}/info/refs?service=git-upload-pack"),
        &origin,
        &|address| {
            Ok(Request::get(address)?
                .with_header("git-protocol", "version=2")
                .with_header("user-agent", "git/2.0 (smith)"))
        },
    )?;
    let mut lines = Pkts::new(&advert);
    let mut version_2 = false;
    while let Some(line) = lines.next().map_err(|why| protocol_error(&origin, why))? {
        if matches!(line, Pkt::Data(data) if text(data) == "version 2") {
            version_2 = true;
        }
    }
    if !version_2 {
        return Err(protocol_error(
            &origin,
            "the server does not offer git's protocol version 2 (its answer to info/refs is not a version 2 capability advertisement), and smith speaks only that".to_owned(),
        ));
    }
    let (commit, reference) = find_ref(client, base, want, &origin)?;
    let mut body = Vec::new();
    pkt(&mut body, "command=fetch\n");
    body.extend_from_slice(b"0001");
    pkt(&mut body, "ofs-delta\n");
    pkt(&mut body, "no-progress\n");
    pkt(&mut body, &format!("want {}\n", pack::hex(&commit)));
    pkt(&mut body, "deepen 1\n");
    pkt(&mut body, "done\n");
    body.extend_from_slice(b"0000");
    let answer = post(client, &format!("{base}/git-upload-pack"), body, &origin)?;
    let bytes = packfile(&answer, &origin)?;
    let objects = pack::decode(&bytes, &origin)?;
    let root = pack::commit_tree(&objects, &commit, &origin)?;
    let root = match subdir {
        Some(path) => pack::subtree(&objects, root, path, &origin)?,
        None => root,
    };
    let skipped = pack::checkout(&objects, root, "", tree, 0)?;
    Ok(Fetched {
        commit: pack::hex(&commit),
        reference,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pkt_lines_and_side_band_read_back() {
        let mut answer = Vec::new();
        pkt(&mut answer, "shallow-info\n");
        pkt(
            &mut answer,
            "shallow 0123456789012345678901234567890123456789\n",
        );
        answer.extend_from_slice(b"0001");
        pkt(&mut answer, "packfile\n");
        pkt(&mut answer, "\u{2}counting\n");
        pkt(&mut answer, "\u{1}PACK");
        pkt(&mut answer, "\u{1}rest");
        answer.extend_from_slice(b"0000");
        assert_eq!(packfile(&answer, "t").unwrap(), b"PACKrest");
        let mut failed = Vec::new();
        pkt(&mut failed, "packfile\n");
        pkt(&mut failed, "\u{3}upload-pack: not our ref\n");
        let e = packfile(&failed, "t").unwrap_err();
        assert!(e.why().contains("not our ref"), "{}", e.why());
        assert!(Pkts::new(b"00").next().is_err());
    }
}
