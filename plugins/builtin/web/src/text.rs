//! Turning a response body into text for the model: the media type and
//! charset from `Content-Type` (or an HTML page's `<meta>`), decoding
//! (UTF-8, ISO-8859-1, windows-1252, ASCII), and HTML to Markdown (the
//! `htmd` crate) or to plain text.

/// What kind of content a response holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An HTML or XHTML page.
    Html,
    /// Text of another kind (plain text, JSON, XML, CSS, JavaScript...).
    Text,
}

/// The media type (lower-cased, without parameters) and the `charset`
/// parameter of a `Content-Type` value.
pub fn content_type(value: &str) -> (String, Option<String>) {
    let mut parts = value.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (name, value) = p.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
    });
    (media, charset)
}

/// What the media type `media` holds, or why it is not read. An empty
/// media type (no `Content-Type`) is judged by the bytes.
pub fn kind(media: &str, body: &[u8]) -> Result<Kind, String> {
    if media.is_empty() {
        let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
        if head.contains("<html") || head.contains("<!doctype html") {
            return Ok(Kind::Html);
        }
        if std::str::from_utf8(body).is_ok() {
            return Ok(Kind::Text);
        }
        return Err("the server sent no Content-Type and the body is not text".to_owned());
    }
    if media == "text/html" || media == "application/xhtml+xml" {
        return Ok(Kind::Html);
    }
    let textual = media.starts_with("text/")
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || matches!(
            media,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
        );
    if textual {
        return Ok(Kind::Text);
    }
    Err(format!("its content is {media}, not text or HTML"))
}

/// The charset an HTML page declares in a `<meta>` within its first
/// 1024 bytes.
pub fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")?;
    let rest = head[at + "charset=".len()..].trim_start_matches(['"', '\'', ' ']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    let charset = &rest[..end];
    (!charset.is_empty()).then(|| charset.to_owned())
}

/// The body as text in `charset` (UTF-8 when none); a note when the
/// charset is unknown and the bytes were read as UTF-8.
pub fn decode(body: &[u8], charset: Option<&str>) -> (String, Option<String>) {
    match charset.unwrap_or("utf-8") {
        "utf-8" | "utf8" | "us-ascii" | "ascii" => {
            (String::from_utf8_lossy(body).into_owned(), None)
        }
        "iso-8859-1" | "latin1" | "latin-1" | "iso8859-1" | "l1" => {
            (body.iter().map(|&b| char::from(b)).collect(), None)
        }
        "windows-1252" | "cp1252" | "x-cp1252" => (body.iter().map(|&b| cp1252(b)).collect(), None),
        other => (
            String::from_utf8_lossy(body).into_owned(),
            Some(format!(
                "the page's charset {other} is not one web_fetch decodes (UTF-8, ISO-8859-1, windows-1252); it was read as UTF-8, so some characters may be wrong"
            )),
        ),
    }
}

/// One windows-1252 byte as a character (ISO-8859-1 but for 0x80-0x9F).
fn cp1252(byte: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    match byte {
        0x80..=0x9f => HIGH[usize::from(byte - 0x80)],
        _ => char::from(byte),
    }
}

/// HTML as Markdown; scripts, styles and other non-content elements are
/// left out.
pub fn markdown(html: &str) -> Result<String, String> {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "iframe", "svg", "canvas", "head",
        ])
        .build()
        .convert(html)
        .map(|text| tidy(&text))
        .map_err(|e| format!("the page could not be converted to Markdown: {e}"))
}

/// HTML as plain text: the Markdown with its markup taken out (links keep
/// their text, images their description).
pub fn plain(html: &str) -> Result<String, String> {
    let md = markdown(html)?;
    let mut out = String::with_capacity(md.len());
    for line in md.lines() {
        let line = line.trim_start_matches(['#', '>', ' ']);
        let line = line
            .strip_prefix("* ")
            .or_else(|| line.strip_prefix("- "))
            .unwrap_or(line);
        out.push_str(&unlink(line).replace("**", "").replace('`', ""));
        out.push('\n');
    }
    Ok(tidy(&out))
}

/// `[text](url)` and `![text](url)` as `text`.
fn unlink(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](") else {
            break;
        };
        let close = open + close;
        let Some(end) = rest[close..].find(')') else {
            break;
        };
        let end = close + end;
        let before = rest[..open].strip_suffix('!').unwrap_or(&rest[..open]);
        out.push_str(before);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Markdown whose relative link and image targets (`[a](/x)`,
/// `![b](img.png)`) are made absolute against `base`, the page's URL, so
/// the model can fetch them as they are. Fragments and targets that do not
/// resolve to http or https are left as they were.
pub fn absolute_links(markdown: &str, base: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        let (before, after) = rest.split_at(at + 2);
        out.push_str(before);
        let end = after.find([')', ' ', '\n']).unwrap_or(after.len());
        let target = &after[..end];
        let keep = target.is_empty() || target.starts_with('#') || crate::url::is_http(target);
        match crate::url::join(base, target) {
            Ok(absolute) if !keep => out.push_str(&absolute),
            _ => out.push_str(target),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Trailing spaces removed and runs of blank lines folded into one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}
