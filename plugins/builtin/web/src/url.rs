//! The little URL handling the tools need: the scheme check, a redirect's
//! `Location` resolved against the URL it came from.
//! The host parses every URL again before it sends anything.

/// Whether `url` starts with `http://` or `https://` (any case).
pub fn is_http(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// `scheme://authority` of an http(s) URL.
fn origin(url: &str) -> &str {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    &url[..end]
}

/// `Location` (absolute, scheme-relative, absolute-path or relative)
/// resolved against `base`; the fragment is dropped.
///
/// # Errors
///
/// When the location names a scheme other than http or https.
pub fn join(base: &str, location: &str) -> Result<String, String> {
    let location = location.trim();
    let location = location.split('#').next().unwrap_or(location);
    if is_http(location) {
        return Ok(location.to_owned());
    }
    let scheme_end = location.find(':');
    let path_start = location.find(['/', '?']);
    if let Some(colon) = scheme_end
        && path_start.is_none_or(|slash| colon < slash)
    {
        return Err(format!(
            "it leads to {location:?}, which is not an http or https URL"
        ));
    }
    let origin = origin(base);
    if let Some(rest) = location.strip_prefix("//") {
        let scheme = &base[..base.find("://").unwrap_or(0)];
        return Ok(format!("{scheme}://{rest}"));
    }
    if location.starts_with('/') {
        return Ok(format!("{origin}{location}"));
    }
    let path = &base[origin.len()..];
    let path = path.split(['?', '#']).next().unwrap_or("");
    if location.starts_with('?') {
        let path = if path.is_empty() { "/" } else { path };
        return Ok(format!("{origin}{path}{location}"));
    }
    let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
    Ok(format!("{origin}{dir}{location}"))
}
