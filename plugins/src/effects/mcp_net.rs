//! The `mcp-net` grant: smith/mcp reaches exactly the endpoints of the
//! configured MCP servers that speak Streamable HTTP, and nothing else.
//!
//! A built-in's grants are static, but the hosts an MCP client must reach
//! are whatever the user configured. Rather than a `net` grant for every
//! host, `http-request` of a plugin granted `mcp-net` (built-ins only; a
//! manifest cannot ask for it) is allowed when its URL is, to the byte of
//! scheme, host, port, path and query, the `url` of a server in the same
//! configuration `mcp-servers` hands out (the user's `mcp` block, a
//! trusted project's) or of a `.mcp.json` entry of a trusted project. The
//! host reads that configuration itself, so the plugin cannot widen it.
//!
//! Plain `http://` is allowed only to a loopback host (`localhost`,
//! `127.0.0.0/8`, `::1`): anything else would send the session id and the
//! configured credentials in the clear.
//!
//! The configured headers of the matched server may name secrets as
//! `{secret:PROVIDER.SLOT}` (filled in by the host, without a `secrets`
//! grant: the user named them for this server) and environment variables
//! as `${VAR}` or `${VAR:-default}` (the `.mcp.json` convention, expanded
//! from smith's environment by the host, only in a header whose name and
//! value are exactly the configured ones). Either way the plugin never
//! holds the value, and every value put in is registered for redaction.

use std::path::Path;

use smith_config::mcp::McpServer;

use super::{Effects, MAX_PEEK_BYTES};

/// The configured server an MCP request goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct McpEndpoint {
    /// Its configured headers (values as written: they may name secrets
    /// and variables).
    pub headers: Vec<(String, String)>,
}

impl Effects {
    /// The configured MCP HTTP server whose endpoint `url` is, when the
    /// plugin holds `mcp-net`; an error naming why a loopback-only rule
    /// refused it.
    pub(super) fn mcp_endpoint(&self, url: &smith_net::Url) -> Result<Option<McpEndpoint>, String> {
        if !self.grants.mcp_net {
            return Ok(None);
        }
        let Some(access) = self.permissions.as_deref() else {
            return Ok(None);
        };
        let project = access.trusted.is_some().then_some(access.root.as_path());
        let config = access.user_config.as_deref().and_then(Path::parent);
        let mut all = endpoints(&access.mcp_servers, project);
        if let Some(config) = config {
            all.extend(marketplace_endpoints(config));
        }
        for (configured, headers) in all {
            let Ok(parsed) = smith_net::Url::parse(&configured) else {
                continue;
            };
            if parsed.scheme() == url.scheme()
                && parsed.host() == url.host()
                && parsed.port() == url.port()
                && parsed.target() == url.target()
            {
                if url.scheme() == smith_net::Scheme::Http && !loopback(url.host()) {
                    return Err(format!(
                        "the MCP endpoint http://{}{} is plain http to a host that is not this machine, which would send its session and credentials in the clear; use https:// (plain http is allowed only for localhost, 127.0.0.0/8 and ::1)",
                        url.authority(),
                        url.target().split('?').next().unwrap_or("")
                    ));
                }
                return Ok(Some(McpEndpoint { headers }));
            }
        }
        Ok(None)
    }
}

impl Effects {
    /// Whether `url` is the endpoint of a configured MCP HTTP server this
    /// plugin may reach under `mcp-net` (and no `net` grant covers it).
    pub fn reaches_mcp_endpoint(&self, url: &str) -> bool {
        smith_net::Url::parse(url).is_ok_and(|parsed| {
            !self.grants.net.iter().any(|h| h == parsed.host())
                && matches!(self.mcp_endpoint(&parsed), Ok(Some(_)))
        })
    }
}

/// Whether `host` (lower-cased, IPv6 without brackets) is this machine.
pub(super) fn loopback(host: &str) -> bool {
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The HTTP endpoints (and headers) of the marketplace plugins whose MCP
/// servers the user enabled (`enabled.mcp` in the install records in
/// `config/marketplace-plugins`), from each plugin's `.mcp.json` and
/// plugin.json's `mcpServers` (inline, or the files it names), with
/// `${CLAUDE_PLUGIN_ROOT}` replaced by the plugin's folder, as smith/mcp
/// reads them.
fn marketplace_endpoints(config: &Path) -> Vec<(String, Vec<(String, String)>)> {
    let folder = config.join("marketplace-plugins");
    let read = |path: &Path| -> Option<serde_json::Value> {
        let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= MAX_PEEK_BYTES);
        small
            .then(|| std::fs::read_to_string(path).ok())
            .flatten()
            .and_then(|text| serde_json::from_str(&text).ok())
    };
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return out;
    };
    let mut records: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    records.sort();
    for record_path in records {
        let Some(id) = record_path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
            .filter(|id| id.contains('@') && !id.starts_with('.'))
        else {
            continue;
        };
        let Some(record) = read(&record_path) else {
            continue;
        };
        let enabled = record
            .get("enabled")
            .and_then(|e| e.get("mcp"))
            .is_some_and(serde_json::Value::is_string);
        if !enabled {
            continue;
        }
        let root = folder.join(id);
        let mut docs = Vec::new();
        docs.extend(read(&root.join(".mcp.json")));
        match read(&root.join(".claude-plugin/plugin.json"))
            .and_then(|m| m.get("mcpServers").cloned())
        {
            Some(inline @ serde_json::Value::Object(_)) => docs.push(inline),
            Some(serde_json::Value::String(path)) => {
                docs.extend(read(&root.join(path.trim_start_matches("./"))));
            }
            Some(serde_json::Value::Array(paths)) => {
                for path in paths.iter().filter_map(serde_json::Value::as_str) {
                    docs.extend(read(&root.join(path.trim_start_matches("./"))));
                }
            }
            _ => {}
        }
        let root_text = root.to_string_lossy();
        for doc in docs {
            for (url, headers) in http_servers(&doc) {
                let expand = |t: &str| t.replace("${CLAUDE_PLUGIN_ROOT}", &root_text);
                out.push((
                    expand(&url),
                    headers.into_iter().map(|(k, v)| (k, expand(&v))).collect(),
                ));
            }
        }
    }
    out
}

/// The endpoints of the configured HTTP servers and their headers: the
/// configuration's, then those of `.mcp.json` in `project` (a trusted
/// project's root), as smith/mcp reads them.
fn endpoints(
    configured: &[McpServer],
    project: Option<&Path>,
) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = configured
        .iter()
        .filter_map(|s| s.url.clone().map(|url| (url, s.headers.clone())))
        .collect();
    let Some(root) = project else {
        return out;
    };
    let path = root.join(".mcp.json");
    let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_PEEK_BYTES);
    let Some(doc) = small
        .then(|| std::fs::read_to_string(&path).ok())
        .flatten()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
    else {
        return out;
    };
    out.extend(http_servers(&doc));
    out
}

/// The Streamable HTTP servers of an `mcpServers` document: their URL
/// and headers.
fn http_servers(doc: &serde_json::Value) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let map = doc
        .get("mcpServers")
        .and_then(serde_json::Value::as_object)
        .or_else(|| doc.as_object());
    for entry in map.into_iter().flat_map(|m| m.values()) {
        let kind = entry.get("type").and_then(serde_json::Value::as_str);
        let Some(url) = entry.get("url").and_then(serde_json::Value::as_str) else {
            continue;
        };
        if kind == Some("sse") {
            continue;
        }
        let headers = entry
            .get("headers")
            .and_then(serde_json::Value::as_object)
            .map(|h| {
                h.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        out.push((url.to_owned(), headers));
    }
    out
}

/// `value` with each `${VAR}` and `${VAR:-default}` replaced from `env`
/// (an unset variable without a default becomes empty); the names of the
/// unset ones, for the diagnostic.
pub(super) fn expand_env(
    value: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> (String, Vec<String>) {
    let mut out = String::with_capacity(value.len());
    let mut unset = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        out.push_str(&rest[..at]);
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(default)) => out.push_str(default),
            (None, None) => unset.push(name.to_owned()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    (out, unset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        let env = |name: &str| (name == "TOKEN").then(|| "abc".to_owned());
        assert_eq!(
            expand_env("Bearer ${TOKEN}", &env),
            ("Bearer abc".to_owned(), Vec::new())
        );
        assert_eq!(
            expand_env("${MISSING:-x}-${GONE}", &env),
            ("x-".to_owned(), vec!["GONE".to_owned()])
        );
        assert_eq!(
            expand_env("no ${ brace", &env),
            ("no ${ brace".to_owned(), Vec::new())
        );
    }

    #[test]
    fn only_this_machine_is_loopback() {
        for host in ["localhost", "127.0.0.1", "127.9.8.7", "::1"] {
            assert!(loopback(host), "{host}");
        }
        for host in ["example.com", "10.0.0.1", "localhost.example.com", "::2"] {
            assert!(!loopback(host), "{host}");
        }
    }

    #[test]
    fn a_trusted_projects_mcp_json_adds_its_http_endpoints_but_not_sse_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {
                "a": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "${K}"}},
                "b": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                "c": {"command": "x"}
            }}"#,
        )
        .unwrap();
        let found = endpoints(&[], Some(dir.path()));
        assert_eq!(
            found,
            vec![(
                "http://127.0.0.1:9/mcp".to_owned(),
                vec![("X-Key".to_owned(), "${K}".to_owned())]
            )]
        );
        assert!(endpoints(&[], None).is_empty());
    }

    #[test]
    fn enabled_marketplace_plugins_add_their_http_endpoints_with_the_plugin_root() {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("marketplace-plugins");
        for (id, enabled) in [("on@m", r#"{"mcp": "sha256:0"}"#), ("off@m", "{}")] {
            std::fs::create_dir_all(plugins.join(id)).unwrap();
            std::fs::write(
                plugins.join(format!("{id}.json")),
                format!(r#"{{"plugin": "x", "enabled": {enabled}}}"#),
            )
            .unwrap();
            std::fs::write(
                plugins.join(id).join(".mcp.json"),
                format!(
                    r#"{{"mcpServers": {{"s": {{"type": "http", "url": "http://127.0.0.1:9/{id}", "headers": {{"X-Root": "${{CLAUDE_PLUGIN_ROOT}}"}}}}}}}}"#
                ),
            )
            .unwrap();
        }
        let found = marketplace_endpoints(dir.path());
        assert_eq!(
            found,
            vec![(
                "http://127.0.0.1:9/on@m".to_owned(),
                vec![(
                    "X-Root".to_owned(),
                    plugins.join("on@m").to_string_lossy().into_owned()
                )]
            )]
        );
    }
}
