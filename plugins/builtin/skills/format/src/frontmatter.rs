//! The YAML frontmatter subset SKILL.md files use, read by hand (no YAML
//! crate in the wasm plugin).
//!
//! Accepted, at the top level (keys at the start of the line):
//!
//! - plain scalars (`name: pdf`), continued on more-indented lines
//!   (folded with spaces), with ` #` comments cut;
//! - single-quoted (`''` is a quote) and double-quoted strings (escapes
//!   `\\ \" \n \t \r \0 \/ \uXXXX`), which may span lines;
//! - block scalars, literal `|` and folded `>`, with the chomping
//!   indicators `-` and `+` and an optional indentation digit;
//! - lists: flow (`[Read, Grep]`) on one line, or block (`- Read` lines);
//! - nested mappings (`metadata:` with indented `key: value` lines) are
//!   accepted and not read;
//! - blank lines and `#` comment lines.
//!
//! Refused, with the line: tabs in indentation, anchors (`&`), aliases
//! (`*`), tags (`!`), a key given twice, a line that is no `key: value`,
//! an unclosed quote or list, and a frontmatter whose closing `---` is
//! missing.

/// A value of a top-level key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Text(String),
    /// A list of strings.
    List(Vec<String>),
    /// A nested mapping (not read).
    Map,
}

/// The top-level keys of the frontmatter of `text`, in order, and where
/// the body starts (a byte offset). The error names the line and says
/// what to change.
pub fn parse(text: &str) -> Result<(Vec<(String, Value)>, usize), String> {
    let text_start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let lines = line_spans(text);
    let first = lines.first().map(|&(s, e)| &text[s.max(text_start)..e]);
    if first.map(str::trim_end) != Some("---") {
        return Err(
            "the file does not start with a `---` line; a SKILL.md begins with YAML frontmatter between two `---` lines (name, description)"
                .to_owned(),
        );
    }
    let Some(close) = lines
        .iter()
        .skip(1)
        .position(|&(s, e)| matches!(text[s..e].trim_end(), "---" | "..."))
        .map(|i| i + 1)
    else {
        return Err(
            "the frontmatter opened by `---` on line 1 is never closed; add a `---` line after its last key"
                .to_owned(),
        );
    };
    let body_start = lines.get(close + 1).map_or(text.len(), |&(start, _)| start);
    let inner: Vec<&str> = lines[1..close].iter().map(|&(s, e)| &text[s..e]).collect();
    let fields = Parser {
        lines: &inner,
        at: 0,
    }
    .fields()?;
    Ok((fields, body_start))
}

/// Each line's start and end (without its line break).
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (index, c) in text.char_indices() {
        if c == '\n' {
            let end = if text[..index].ends_with('\r') {
                index - 1
            } else {
                index
            };
            spans.push((start, end));
            start = index + 1;
        }
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    spans
}

struct Parser<'a> {
    lines: &'a [&'a str],
    at: usize,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// A plain scalar's text without a trailing ` #` comment.
fn uncomment(text: &str) -> &str {
    let mut cut = text.len();
    let bytes = text.as_bytes();
    for (index, b) in bytes.iter().enumerate() {
        if *b == b'#' && index > 0 && (bytes[index - 1] == b' ' || bytes[index - 1] == b'\t') {
            cut = index;
            break;
        }
    }
    text[..cut].trim_end()
}

impl Parser<'_> {
    /// Line `self.at` for messages (the frontmatter's line 1 is the file's
    /// line 2).
    fn line_no(&self, index: usize) -> usize {
        index + 2
    }

    fn fields(mut self) -> Result<Vec<(String, Value)>, String> {
        let mut fields: Vec<(String, Value)> = Vec::new();
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if blank(line) {
                self.at += 1;
                continue;
            }
            let no = self.line_no(self.at);
            if line.starts_with('\t') || line.starts_with(' ') {
                return Err(format!(
                    "line {no} is indented but belongs to no key; start each key at the beginning of its line (and indent with spaces, never tabs)"
                ));
            }
            let Some((key, rest)) = split_key(line) else {
                return Err(format!(
                    "line {no} (`{}`) is not `key: value`; write each field as `key: value`",
                    line.trim()
                ));
            };
            if fields.iter().any(|(k, _)| k == key) {
                return Err(format!(
                    "the key `{key}` is given twice (line {no}); keep one of them"
                ));
            }
            self.at += 1;
            let value = self.value(key, rest.trim(), no)?;
            fields.push((key.to_owned(), value));
        }
        Ok(fields)
    }

    /// The following lines more indented than the key (blank lines
    /// included), taken.
    fn take_indented(&mut self) -> Vec<&str> {
        let mut taken = Vec::new();
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if line.trim().is_empty() || line.starts_with(' ') || line.starts_with('\t') {
                taken.push(line);
                self.at += 1;
            } else {
                break;
            }
        }
        while taken.last().is_some_and(|l| l.trim().is_empty()) {
            taken.pop();
            // Blank lines before the next key stay unread (they are blank).
        }
        taken
    }

    fn value(&mut self, key: &str, rest: &str, no: usize) -> Result<Value, String> {
        if let Some(c) = rest.chars().next().filter(|c| matches!(c, '&' | '*' | '!')) {
            let what = match c {
                '&' => "an anchor (`&`)",
                '*' => "an alias (`*`)",
                _ => "a tag (`!`)",
            };
            return Err(format!(
                "`{key}` (line {no}) uses {what}, which SKILL.md frontmatter does not need and smith does not read; write the value itself"
            ));
        }
        if rest.starts_with('|') || rest.starts_with('>') {
            return self.block_scalar(key, rest, no).map(Value::Text);
        }
        if rest.starts_with('"') || rest.starts_with('\'') {
            return self.quoted(key, rest, no).map(Value::Text);
        }
        if rest.starts_with('[') {
            return flow_list(key, rest, no).map(Value::List);
        }
        if rest.starts_with('{') {
            self.take_indented();
            return Ok(Value::Map);
        }
        let rest = uncomment(rest);
        let more = self.take_indented();
        if let Some(tab) = more.iter().position(|l| l.starts_with('\t')) {
            return Err(format!(
                "line {} under `{key}` is indented with a tab; indent with spaces",
                no + 1 + tab
            ));
        }
        let content: Vec<&str> = more.iter().copied().filter(|l| !blank(l)).collect();
        if rest.is_empty() {
            if content.is_empty() {
                return Ok(Value::Text(String::new()));
            }
            if content.iter().all(|l| l.trim_start().starts_with('-')) {
                return content
                    .iter()
                    .map(|l| {
                        let item = l.trim_start()[1..].trim();
                        scalar_item(key, item, no)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::List);
            }
            if content.iter().all(|l| split_key(l.trim_start()).is_some()) {
                return Ok(Value::Map);
            }
        }
        // A plain scalar, folded: line breaks become spaces, blank lines
        // line breaks.
        let mut text = rest.to_owned();
        for line in more {
            if line.trim().is_empty() {
                text.push('\n');
            } else {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push(' ');
                }
                text.push_str(uncomment(line.trim()));
            }
        }
        Ok(Value::Text(text))
    }

    fn block_scalar(&mut self, key: &str, header: &str, no: usize) -> Result<String, String> {
        let header = uncomment(header);
        let literal = header.starts_with('|');
        let mut keep = false;
        let mut strip = false;
        let mut explicit = None;
        for c in header[1..].chars() {
            match c {
                '-' => strip = true,
                '+' => keep = true,
                '1'..='9' => explicit = c.to_digit(10).map(|d| d as usize),
                _ => {
                    return Err(format!(
                        "`{key}` (line {no}) starts a block with `{header}`, which is not `|`, `>`, `|-`, `>-`, `|+` or `>+`; write one of those"
                    ));
                }
            }
        }
        let mut lines = Vec::new();
        let mut trailing_blank = 0usize;
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if line.trim().is_empty() {
                trailing_blank += 1;
                lines.push("");
                self.at += 1;
            } else if line.starts_with(' ') || line.starts_with('\t') {
                if line.starts_with('\t') {
                    return Err(format!(
                        "line {} in the block of `{key}` is indented with a tab; indent with spaces",
                        self.line_no(self.at)
                    ));
                }
                trailing_blank = 0;
                lines.push(line);
                self.at += 1;
            } else {
                break;
            }
        }
        let width = explicit.unwrap_or_else(|| {
            lines
                .iter()
                .find(|l| !l.is_empty())
                .map_or(0, |l| indent(l))
        });
        let content: Vec<&str> = lines
            .iter()
            .map(|l| if l.len() >= width { &l[width..] } else { "" })
            .collect();
        let kept = content.len() - trailing_blank.min(content.len());
        let body = &content[..kept];
        let mut text = String::new();
        if literal {
            text = body.join("\n");
        } else {
            // Folded: lines join with spaces; a blank line is a line
            // break; more-indented lines keep their breaks.
            let mut previous_plain = false;
            for line in body {
                if line.is_empty() {
                    text.push('\n');
                    previous_plain = false;
                } else if line.starts_with(' ') {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(line);
                    text.push('\n');
                    previous_plain = false;
                } else {
                    if previous_plain {
                        text.push(' ');
                    }
                    text.push_str(line);
                    previous_plain = true;
                }
            }
            let end = text.trim_end_matches('\n').len();
            text.truncate(end);
        }
        if strip || text.is_empty() {
            return Ok(text);
        }
        text.push('\n');
        if keep {
            for _ in 0..trailing_blank {
                text.push('\n');
            }
        }
        Ok(text)
    }

    fn quoted(&mut self, key: &str, rest: &str, no: usize) -> Result<String, String> {
        let quote = rest.chars().next().unwrap_or('"');
        let mut source = rest[1..].to_owned();
        loop {
            if let Some((value, after)) = close_quote(&source, quote) {
                let after = uncomment(after.trim());
                if !after.is_empty() {
                    return Err(format!(
                        "`{key}` (line {no}) has `{after}` after its closing quote; put the whole value inside the quotes"
                    ));
                }
                return if quote == '"' {
                    unescape(&value).map_err(|e| format!("`{key}` (line {no}): {e}"))
                } else {
                    Ok(value)
                };
            }
            // The string goes on: its line break folds into a space.
            if self.at >= self.lines.len() {
                return Err(format!(
                    "`{key}` (line {no}) opens a {quote} quote that is never closed; close it on the value's last line"
                ));
            }
            let next = self.lines[self.at].trim();
            self.at += 1;
            if next.is_empty() {
                source.push('\n');
            } else {
                if !source.ends_with('\n') {
                    source.push(' ');
                }
                source.push_str(next);
            }
        }
    }
}

/// The quoted text up to the closing quote (raw for `"`, with `''` read
/// for `'`) and what follows it; none when it does not close.
fn close_quote(source: &str, quote: char) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = source.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if quote == '"' && c == '\\' {
            value.push(c);
            if let Some((_, next)) = chars.next() {
                value.push(next);
            }
        } else if c == quote {
            if quote == '\'' && chars.peek().is_some_and(|(_, n)| *n == '\'') {
                chars.next();
                value.push('\'');
            } else {
                return Some((value, &source[index + 1..]));
            }
        } else {
            value.push(c);
        }
    }
    None
}

fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some('/') => out.push('/'),
            Some(' ') => out.push(' '),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| {
                        format!("`\\u{hex}` is not a character; write four hex digits")
                    })?;
                out.push(code);
            }
            other => {
                return Err(format!(
                    "the escape `\\{}` is not one smith reads (\\n \\t \\r \\0 \\\" \\\\ \\/ \\uXXXX); use single quotes for a backslash as written",
                    other.map(String::from).unwrap_or_default()
                ));
            }
        }
    }
    Ok(out)
}

/// A list item or flow element: quoted or plain.
fn scalar_item(key: &str, item: &str, no: usize) -> Result<String, String> {
    let item = item.trim();
    if item.starts_with('"') || item.starts_with('\'') {
        let quote = item.chars().next().unwrap_or('"');
        return match close_quote(&item[1..], quote) {
            Some((value, after)) if uncomment(after.trim()).is_empty() => {
                if quote == '"' {
                    unescape(&value).map_err(|e| format!("`{key}` (line {no}): {e}"))
                } else {
                    Ok(value)
                }
            }
            _ => Err(format!(
                "an item of `{key}` (near line {no}) has an unclosed or misplaced quote; quote each item whole"
            )),
        };
    }
    Ok(uncomment(item).to_owned())
}

/// `[a, "b", c]` on one line.
fn flow_list(key: &str, rest: &str, no: usize) -> Result<Vec<String>, String> {
    let rest = uncomment(rest);
    let Some(inner) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) else {
        return Err(format!(
            "`{key}` (line {no}) opens a `[` list that does not close on the same line; write it on one line, or as `- item` lines"
        ));
    };
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                current.push(c);
            }
            (Some(q), _) if c == q => {
                quote = None;
                current.push(c);
            }
            (None, ',') => items.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    items.push(current);
    items
        .iter()
        .filter(|i| !i.trim().is_empty())
        .map(|i| scalar_item(key, i, no))
        .collect()
}

/// `key: rest` or `key:` with a key of letters, digits, `-`, `_` and `.`.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let colon = line.find(':')?;
    let key = &line[..colon];
    let after = &line[colon + 1..];
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    (valid && (after.is_empty() || after.starts_with(' ') || after.starts_with('\t')))
        .then_some((key, after))
}
