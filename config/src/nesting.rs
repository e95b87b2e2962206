//! The nesting limit every KDL file smith reads is checked against before
//! it is parsed.
//!
//! The KDL parser descends once per level of `{ ... }` children block (and
//! per level of nested `/* ... */` comment), so a file nested deeply enough
//! would exhaust the stack and abort the process. [`check`] scans the text
//! without building anything — skipping strings (quoted, raw and
//! multi-line) and comments — and refuses a file nested deeper than
//! [`MAX_DEPTH`] levels, naming the line where the limit is crossed. No
//! configuration or manifest smith defines needs more than a handful of
//! levels.

/// The deepest nesting of children blocks (or of block comments) a KDL file
/// may have.
pub const MAX_DEPTH: usize = 64;

/// Where a text crosses [`MAX_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// The line (1-based) of the brace or comment opening level
    /// `MAX_DEPTH + 1`.
    pub line: usize,
    /// The column (1-based, in characters) of that opening.
    pub column: usize,
    /// The byte offset of that opening.
    pub offset: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} nests deeper than {MAX_DEPTH} levels of blocks, the limit smith reads",
            self.line
        )
    }
}

impl std::error::Error for TooDeep {}

/// Checks that `text` nests children blocks and block comments at most
/// [`MAX_DEPTH`] levels deep.
///
/// The scan is linear and allocates nothing; text that is not valid KDL is
/// left for the parser to report.
///
/// # Errors
///
/// [`TooDeep`] at the first opening beyond the limit.
pub fn check(text: &str) -> Result<(), TooDeep> {
    let bytes = text.as_bytes();
    let too_deep = |offset: usize| {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        TooDeep {
            line,
            column: text[line_start..offset].chars().count() + 1,
            offset,
        }
    };
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(too_deep(i));
                }
                i += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = bytes[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |n| i + n + 1);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut comments = 0usize;
                while i < bytes.len() {
                    if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                        comments += 1;
                        if comments > MAX_DEPTH {
                            return Err(too_deep(i));
                        }
                        i += 2;
                    } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        comments -= 1;
                        i += 2;
                        if comments == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'"' => i = skip_quoted(bytes, i),
            b'#' => {
                let hashes = bytes[i..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(i + hashes) == Some(&b'"') {
                    i = skip_raw(bytes, i + hashes, hashes);
                } else {
                    i += hashes;
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// The offset just past the quoted string (single- or multi-line) that
/// opens at `start`; escapes are honored.
fn skip_quoted(bytes: &[u8], start: usize) -> usize {
    let multi = bytes[start..].starts_with(b"\"\"\"");
    let mut i = start + if multi { 3 } else { 1 };
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' if !multi => return i + 1,
            b'"' if bytes[i..].starts_with(b"\"\"\"") => return i + 3,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The offset just past the raw string whose quotes open at `quote` after
/// `hashes` `#`s; nothing inside is an escape.
fn skip_raw(bytes: &[u8], quote: usize, hashes: usize) -> usize {
    let quotes = if bytes[quote..].starts_with(b"\"\"\"") {
        3
    } else {
        1
    };
    let mut i = quote + quotes;
    while i < bytes.len() {
        let closes = bytes[i..].starts_with(&b"\"\"\""[..quotes])
            && bytes[i + quotes..]
                .iter()
                .take_while(|&&b| b == b'#')
                .count()
                >= hashes;
        if closes {
            return i + quotes + hashes;
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        let mut text = String::new();
        for _ in 0..levels {
            text.push_str("a {\n");
        }
        for _ in 0..levels {
            text.push_str("}\n");
        }
        text
    }

    #[test]
    fn the_limit_itself_passes_and_one_more_level_is_refused_at_its_line() {
        assert_eq!(check(&nested(MAX_DEPTH)), Ok(()));
        let err = check(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(err.line, MAX_DEPTH + 1);
        assert_eq!(err.column, 3);
        let deep = nested(100_000);
        assert_eq!(check(&deep).unwrap_err().line, MAX_DEPTH + 1);
    }

    #[test]
    fn the_limit_itself_parses_on_a_small_stack() {
        // The limit must be far from what the parser can take: a thread
        // with a quarter of the usual 2 MiB stack parses it.
        let text = nested(MAX_DEPTH);
        let parsed = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || kdl::KdlDocument::parse(&text).is_ok())
            .unwrap()
            .join()
            .unwrap();
        assert!(parsed);
    }

    #[test]
    fn braces_in_strings_and_comments_do_not_count() {
        let braces = "{".repeat(200);
        for text in [
            format!("a \"{braces}\"\n"),
            format!("a \"\\\"{braces}\"\n"),
            format!("a \"\"\"\n\"{braces}\n\"\"\"\n"),
            format!("a #\"\\\"{braces}\"#\n"),
            format!("a ##\"\"#{braces}\"##\n"),
            format!("a #\"\"\"\n\"{braces}\n\"\"\"#\n"),
            format!("// {braces}\na 1\n"),
            format!("/* {braces} /* {braces} */ */\na 1\n"),
            format!("a #true\nb {{ c \"{braces}\" }}\n"),
        ] {
            assert_eq!(check(&text), Ok(()), "{text}");
        }
    }

    #[test]
    fn deeply_nested_block_comments_are_refused() {
        let text = format!(
            "{}{}",
            "/*".repeat(MAX_DEPTH + 1),
            "*/".repeat(MAX_DEPTH + 1)
        );
        let err = check(&text).unwrap_err();
        assert_eq!((err.line, err.column), (1, 2 * MAX_DEPTH + 1));
        let ok = format!("{}{}", "/*".repeat(MAX_DEPTH), "*/".repeat(MAX_DEPTH));
        assert_eq!(check(&ok), Ok(()));
    }
}
