//! MCP servers: the `mcp` block of a configuration file, which the built-in
//! plugin smith/mcp reads (through the host's `mcp-servers`) and starts.
//!
//! ```kdl
//! mcp {
//!     server "files" {
//!         command "npx"
//!         args "-y" "@modelcontextprotocol/server-filesystem" "/srv/docs"
//!         env "LOG_LEVEL" "debug"
//!         cwd "/srv"
//!     }
//!     server "remote" {
//!         url "https://mcp.example.com/mcp"
//!         header "Authorization" "Bearer TOKEN"
//!     }
//! }
//! ```
//!
//! A server runs a program (`command`, its `args`, extra `env` variables, a
//! working folder `cwd`) spoken to over standard input and output, or is
//! reached at a Streamable HTTP `url` (with extra `header`s). The user
//! file's servers apply everywhere; a project's apply only while the
//! project is trusted. Values of `env` and `header` may be credentials:
//! nothing here prints them, and [`McpServer::to_json`] carries them only
//! to the plugin that starts the server.

use std::path::Path;

use kdl::{KdlDocument, KdlNode};
use smith_diag::{Diagnostic, LineCol, Surface};

use crate::error::{ConfigError, ErrorKind};

/// The name of the block holding the servers.
pub const BLOCK: &str = "mcp";

/// The longest server name, in bytes (tool names are `mcp__SERVER__TOOL`,
/// at most 64 bytes in all).
pub const MAX_SERVER_NAME: usize = 32;

/// One configured MCP server.
#[derive(Clone, PartialEq, Eq)]
pub struct McpServer {
    /// Its name (letters, digits, `-` and `_`).
    pub name: String,
    /// The program to run (stdio transport); empty for an HTTP server.
    pub command: String,
    /// The program's arguments.
    pub args: Vec<String>,
    /// Extra environment variables (values may be secret).
    pub env: Vec<(String, String)>,
    /// The working folder (absolute, `~/` for the home folder, or
    /// relative to the project root); none for the project root.
    pub cwd: Option<String>,
    /// The Streamable HTTP endpoint; none for a stdio server.
    pub url: Option<String>,
    /// Extra HTTP headers (values may be secret).
    pub headers: Vec<(String, String)>,
    /// Where it is written (`FILE:LINE`).
    pub origin: String,
}

impl std::fmt::Debug for McpServer {
    // Values of env and headers are left out: they may be credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field(
                "env",
                &self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            )
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("origin", &self.origin)
            .finish()
    }
}

impl McpServer {
    /// The server as the JSON object smith/mcp reads: the `mcpServers`
    /// entry shape (`command`, `args`, `env`, `cwd`, or `type: "http"`,
    /// `url`, `headers`) plus `name` and `origin`.
    pub fn to_json(&self) -> serde_json::Value {
        let map = |pairs: &[(String, String)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone())))
                .collect::<serde_json::Map<_, _>>()
        };
        let mut object = serde_json::json!({
            "name": self.name,
            "origin": self.origin,
        });
        if let Some(url) = &self.url {
            object["type"] = "http".into();
            object["url"] = url.clone().into();
            object["headers"] = map(&self.headers).into();
        } else {
            object["type"] = "stdio".into();
            object["command"] = self.command.clone().into();
            object["args"] = self.args.clone().into();
            object["env"] = map(&self.env).into();
            if let Some(cwd) = &self.cwd {
                object["cwd"] = cwd.clone().into();
            }
        }
        object
    }
}

/// Whether `name` may name a server.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.contains("__")
}

/// The servers of `text` (the contents of `path`), validated; a file that
/// is not KDL has none here (the option walker reports its syntax).
///
/// # Errors
///
/// A configuration error naming the file, the line, the server and what
/// is valid.
pub(crate) fn from_text(text: &str, path: &Path) -> Result<Vec<McpServer>, ConfigError> {
    match KdlDocument::parse(text) {
        Ok(doc) => from_document(&doc, text, path),
        Err(_) => Ok(Vec::new()),
    }
}

/// The servers of the top-level `mcp` blocks of `doc`.
fn from_document(
    doc: &KdlDocument,
    text: &str,
    path: &Path,
) -> Result<Vec<McpServer>, ConfigError> {
    let mut servers: Vec<McpServer> = Vec::new();
    for block in doc.nodes().iter().filter(|n| n.name().value() == BLOCK) {
        let Some(children) = block.children() else {
            return Err(invalid(
                text,
                path,
                block,
                "`mcp` is a block of `server \"NAME\" { ... }` nodes, not a value".to_owned(),
            ));
        };
        if !block.entries().is_empty() {
            return Err(invalid(
                text,
                path,
                block,
                "`mcp` takes no value before its block".to_owned(),
            ));
        }
        for node in children.nodes() {
            let server = server(node, text, path)?;
            if let Some(first) = servers.iter().find(|s| s.name == server.name) {
                return Err(invalid(
                    text,
                    path,
                    node,
                    format!(
                        "the server {:?} is already defined at {}; give each server its own name",
                        server.name, first.origin
                    ),
                ));
            }
            servers.push(server);
        }
    }
    Ok(servers)
}

/// The string values of `node` (all of them unnamed).
fn strings(node: &KdlNode, text: &str, path: &Path) -> Result<Vec<String>, ConfigError> {
    let mut out = Vec::new();
    for entry in node.entries() {
        if entry.name().is_some() {
            return Err(invalid(
                text,
                path,
                node,
                format!(
                    "`{}` takes quoted values, not properties (`{}=`)",
                    node.name().value(),
                    entry.name().map(|n| n.value()).unwrap_or_default()
                ),
            ));
        }
        let Some(value) = entry.value().as_string() else {
            return Err(invalid(
                text,
                path,
                node,
                format!(
                    "`{}` is not a string; every value of `{}` is a quoted string",
                    entry.value(),
                    node.name().value()
                ),
            ));
        };
        out.push(value.to_owned());
    }
    Ok(out)
}

fn server(node: &KdlNode, text: &str, path: &Path) -> Result<McpServer, ConfigError> {
    if node.name().value() != "server" {
        return Err(invalid(
            text,
            path,
            node,
            format!(
                "`{}` is not known in `mcp`; it holds `server \"NAME\" {{ ... }}` nodes",
                node.name().value()
            ),
        ));
    }
    let names = strings(node, text, path)?;
    let [name] = names.as_slice() else {
        return Err(invalid(
            text,
            path,
            node,
            "a server has exactly one name: `server \"NAME\" { ... }`".to_owned(),
        ));
    };
    if !valid_name(name) {
        return Err(invalid(
            text,
            path,
            node,
            format!(
                "the server name {name:?} is not 1 to {MAX_SERVER_NAME} letters, digits, `-` or `_` (without `__`); its tools are named mcp__{{SERVER}}__{{TOOL}}, so rename it"
            ),
        ));
    }
    let line = LineCol::from_offset(text, node.span().offset()).line;
    let mut server = McpServer {
        name: name.clone(),
        command: String::new(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
        url: None,
        headers: Vec::new(),
        origin: format!("{}:{line}", path.display()),
    };
    let Some(children) = node.children() else {
        return Err(invalid(
            text,
            path,
            node,
            format!(
                "the server {name:?} has no block; give it `command \"PROGRAM\"` or `url \"https://...\"` inside `{{ }}`"
            ),
        ));
    };
    for child in children.nodes() {
        let key = child.name().value();
        let values = strings(child, text, path)?;
        let one = |values: &[String]| -> Result<String, ConfigError> {
            match values {
                [value] if !value.is_empty() => Ok(value.clone()),
                _ => Err(invalid(
                    text,
                    path,
                    child,
                    format!("`{key}` takes one non-empty quoted value"),
                )),
            }
        };
        let pair = |values: &[String]| -> Result<(String, String), ConfigError> {
            match values {
                [k, v] if !k.is_empty() => Ok((k.clone(), v.clone())),
                _ => Err(invalid(
                    text,
                    path,
                    child,
                    format!("`{key}` takes a name and a value: `{key} \"NAME\" \"VALUE\"`"),
                )),
            }
        };
        match key {
            "command" => server.command = one(&values)?,
            "args" => server.args.extend(values),
            "env" => server.env.push(pair(&values)?),
            "cwd" => server.cwd = Some(one(&values)?),
            "url" => server.url = Some(one(&values)?),
            "header" => server.headers.push(pair(&values)?),
            other => {
                return Err(invalid(
                    text,
                    path,
                    child,
                    format!(
                        "a server has no `{other}`; it takes `command`, `args`, `env`, `cwd` (a program over stdio) or `url`, `header` (Streamable HTTP)"
                    ),
                ));
            }
        }
    }
    match (&server.url, server.command.is_empty()) {
        (None, true) => Err(invalid(
            text,
            path,
            node,
            format!("the server {name:?} has neither `command` nor `url`; give it one"),
        )),
        (Some(_), false) => Err(invalid(
            text,
            path,
            node,
            format!(
                "the server {name:?} has both `command` and `url`; a server is a program or an endpoint, so keep one"
            ),
        )),
        (Some(url), true) if !(url.starts_with("http://") || url.starts_with("https://")) => {
            Err(invalid(
                text,
                path,
                node,
                format!(
                    "the server {name:?} has the url {url:?}, which is not http:// or https://"
                ),
            ))
        }
        _ => Ok(server),
    }
}

fn invalid(text: &str, path: &Path, node: &KdlNode, why: String) -> ConfigError {
    let at = LineCol::from_offset(text, node.span().offset());
    ConfigError::new(
        ErrorKind::InvalidValue,
        Diagnostic::error(
            "config.mcp",
            format!(
                "the MCP server configuration at {}:{} is invalid",
                path.display(),
                at.line
            ),
            why,
            "fix the `mcp` block (docs/mcp.md shows its shape)",
        )
        .with_surface(Surface::File {
            path: path.to_path_buf(),
            at: Some(at),
        })
        .with_example(
            "mcp {\n    server \"files\" {\n        command \"npx\"\n        args \"-y\" \"@modelcontextprotocol/server-filesystem\" \"/srv\"\n    }\n}",
        ),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(text: &str) -> Result<Vec<McpServer>, ConfigError> {
        from_text(text, Path::new("/home/u/.smith/config.kdl"))
    }

    #[test]
    fn servers_read_with_their_origin_and_keep_secrets_out_of_debug() {
        let servers = parse(
            "model \"m\"\nmcp {\n    server \"files\" {\n        command \"npx\"\n        args \"-y\" \"pkg\"\n        env \"TOKEN\" \"s3cret-value\"\n    }\n    server \"remote\" {\n        url \"https://x.example/mcp\"\n        header \"Authorization\" \"Bearer s3cret-value\"\n    }\n}\n",
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].origin, "/home/u/.smith/config.kdl:3");
        assert_eq!(servers[0].args, ["-y", "pkg"]);
        assert_eq!(servers[0].to_json()["env"]["TOKEN"], "s3cret-value");
        assert_eq!(servers[1].to_json()["type"], "http");
        assert!(!format!("{servers:?}").contains("s3cret"));
    }

    #[test]
    fn a_bad_server_is_refused_naming_file_line_and_fix() {
        for (text, why) in [
            ("mcp {\n  server \"a__b\" { command \"x\" }\n}", "rename it"),
            (
                "mcp {\n  server \"a\" { }\n}",
                "neither `command` nor `url`",
            ),
            (
                "mcp {\n  server \"a\" { command \"x\"\n url \"http://h\" }\n}",
                "both",
            ),
            ("mcp {\n  server \"a\" { comand \"x\" }\n}", "no `comand`"),
            (
                "mcp {\n  server \"a\" { command \"x\" }\n  server \"a\" { command \"y\" }\n}",
                "already defined at /home/u/.smith/config.kdl:2",
            ),
        ] {
            let err = parse(text).unwrap_err();
            let d = err.diagnostic();
            assert!(d.what().contains("config.kdl:"), "{}", d.what());
            assert!(d.why().contains(why), "{text}: {}", d.why());
        }
    }
}
