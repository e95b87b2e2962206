//! Reading one KDL configuration file into settings.

use std::collections::HashMap;
use std::path::Path;

use kdl::{KdlDocument, KdlNode};
use smith_diag::{Diagnostic, LineCol, Severity, Surface};

use crate::error::{ConfigError, ErrorKind};
use crate::options::{self, OptionDecl, UnknownPolicy};
use crate::suggest;
use crate::value::{self, Value};

/// One setting read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileSetting {
    pub decl: &'static OptionDecl,
    pub value: Value,
    pub at: LineCol,
}

/// Parses `text` (the contents of `path`) into settings and permission
/// rules. Unknown keys in
/// `warn` sections become warnings pushed onto `warnings`.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    warnings: &mut Vec<Diagnostic>,
) -> Result<(Vec<FileSetting>, Vec<crate::permissions::PermissionRule>), ConfigError> {
    nesting_limit(text, path)?;
    let doc = KdlDocument::parse(text).map_err(|err| {
        let first = err.diagnostics.first();
        let at = LineCol::from_offset(text, first.map_or(0, |d| d.span.offset()));
        let message = first
            .and_then(|d| d.message.clone())
            .unwrap_or_else(|| "the text is not valid KDL".to_owned());
        let mut why = format!("KDL syntax error: {message}");
        if let Some(help) = first.and_then(|d| d.help.clone()) {
            why.push_str(&format!(" ({help})"));
        }
        ConfigError::new(
            ErrorKind::Parse,
            Diagnostic::error(
                "config.parse",
                format!("{} is not valid KDL", path.display()),
                why,
                "fix the syntax at the position shown; each option is a node name followed by one value",
            )
            .with_surface(Surface::File {
                path: path.to_path_buf(),
                at: Some(at),
            })
            .with_example("tui {\n    theme \"dark\"\n}"),
        )
    })?;
    let mut walker = Walker {
        text,
        path,
        warnings,
        out: Vec::new(),
        seen: HashMap::new(),
    };
    walker.document(&doc, "")?;
    let rules = crate::permissions::from_document(&doc, text, path)?;
    Ok((walker.out, rules))
}

/// Refuses `text` (the contents of `path`) when it nests deeper than
/// [`crate::nesting::MAX_DEPTH`], before the parser sees it.
pub(crate) fn nesting_limit(text: &str, path: &Path) -> Result<(), ConfigError> {
    crate::nesting::check(text).map_err(|deep| {
        ConfigError::new(
            ErrorKind::Parse,
            Diagnostic::error(
                "config.too-deep",
                format!(
                    "{} nests blocks deeper than {} levels at line {}",
                    path.display(),
                    crate::nesting::MAX_DEPTH,
                    deep.line
                ),
                format!(
                    "smith refuses a KDL file nested deeper than {} levels before parsing it, so a hostile file cannot exhaust the stack; no option needs more than a few levels",
                    crate::nesting::MAX_DEPTH
                ),
                "flatten the blocks from the line shown, or remove the file if you did not write it",
            )
            .with_surface(Surface::File {
                path: path.to_path_buf(),
                at: Some(LineCol::from_offset(text, deep.offset)),
            }),
        )
    })
}

/// The largest configuration or permission-rules file smith reads: far
/// beyond any real one, small enough that a hostile file cannot exhaust
/// memory.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The text of the configuration file `path`, `None` when it does not
/// exist. Only a regular file (or a link to one) is read, and only up to
/// [`MAX_FILE_BYTES`]: a FIFO would wait for a writer forever and a device
/// or a huge file would fill memory.
///
/// # Errors
///
/// `config.not-a-file` for a FIFO, socket, device or folder;
/// `config.too-large` beyond the limit; `config.io` when reading fails.
pub(crate) fn read_text(path: &Path, what: &str) -> Result<Option<String>, ConfigError> {
    use std::io::Read as _;
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(crate::error::io_error(
                &format!("read the {what}"),
                path,
                &e,
                "check the file's permissions",
            ));
        }
    };
    if !meta.is_file() {
        return Err(ConfigError::new(
            ErrorKind::Io,
            Diagnostic::error(
                "config.not-a-file",
                format!("{} is not a regular file", path.display()),
                format!(
                    "it is {}; smith reads the {what} only from a regular file, since reading a FIFO waits for a writer and a device can be endless",
                    kind_of(&meta.file_type())
                ),
                "replace it with a regular file, or remove it",
            )
            .with_value(path.display()),
        ));
    }
    let too_large = |size: u64| {
        ConfigError::new(
            ErrorKind::Io,
            Diagnostic::error(
                "config.too-large",
                format!("{} is too large to read", path.display()),
                format!(
                    "it holds {size} bytes, and smith reads a {what} of at most {MAX_FILE_BYTES} bytes (16 MiB)"
                ),
                "remove what does not belong in it; a configuration is a few kilobytes",
            )
            .with_value(path.display()),
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    let read_failed = |e: &std::io::Error| {
        crate::error::io_error(
            &format!("read the {what}"),
            path,
            e,
            "check the file's permissions",
        )
    };
    let file = std::fs::File::open(path).map_err(|e| read_failed(&e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| read_failed(&e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| read_failed(&std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// What an entry that is no regular file is, in words.
fn kind_of(ty: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if ty.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ty.is_socket() {
            return "a socket";
        }
        if ty.is_char_device() || ty.is_block_device() {
            return "a device";
        }
    }
    if ty.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

struct Walker<'a> {
    text: &'a str,
    path: &'a Path,
    warnings: &'a mut Vec<Diagnostic>,
    out: Vec<FileSetting>,
    seen: HashMap<&'static str, LineCol>,
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

impl Walker<'_> {
    fn at(&self, offset: usize) -> LineCol {
        LineCol::from_offset(self.text, offset)
    }

    /// The value as written in the file.
    fn source_text(&self, offset: usize, len: usize) -> &str {
        self.text.get(offset..offset + len).unwrap_or_default()
    }

    fn surface(&self, offset: usize) -> Surface {
        Surface::File {
            path: self.path.to_path_buf(),
            at: Some(self.at(offset)),
        }
    }

    fn document(&mut self, doc: &KdlDocument, prefix: &str) -> Result<(), ConfigError> {
        for node in doc.nodes() {
            // Permission rules are not options: `crate::permissions` reads them.
            // Nor are MCP servers: `crate::mcp` reads them.
            if prefix.is_empty()
                && (node.name().value() == crate::permissions::BLOCK
                    || node.name().value() == crate::mcp::BLOCK)
            {
                continue;
            }
            self.node(node, prefix)?;
        }
        Ok(())
    }

    fn node(&mut self, node: &KdlNode, prefix: &str) -> Result<(), ConfigError> {
        let key = join(prefix, node.name().value());
        let name_offset = node.name().span().offset();
        if let Some(children) = node.children() {
            if options::section(&key).is_some() {
                if let Some(entry) = node.entries().first() {
                    return Err(self.shape_error(
                        &key,
                        entry.span().offset(),
                        format!(
                            "`{key}` is a section, so it takes a block of options, not a value"
                        ),
                        format!(
                            "put the options inside the braces, e.g. {}",
                            section_example(&key)
                        ),
                    ));
                }
                return self.document(children, &key);
            }
            if let Some(decl) = options::find(&key) {
                return Err(self.shape_error(
                    &key,
                    name_offset,
                    format!("`{key}` is an option, so it takes one value, not a block"),
                    format!("write it as `{}`", value::example(decl)),
                ));
            }
            return self.unknown(&key, prefix, name_offset);
        }
        let Some(decl) = options::find(&key) else {
            if options::section(&key).is_some() {
                return Err(self.shape_error(
                    &key,
                    name_offset,
                    format!("`{key}` is a section, so it takes a block of options, not a value"),
                    format!(
                        "put the options inside braces, e.g. {}",
                        section_example(&key)
                    ),
                ));
            }
            return self.unknown(&key, prefix, name_offset);
        };
        let entries = node.entries();
        let [entry] = entries else {
            let offset = entries.get(1).map_or(name_offset, |e| e.span().offset());
            return Err(self.shape_error(
                &key,
                offset,
                format!(
                    "`{key}` takes exactly one value, and {} were given",
                    entries.len()
                ),
                format!("write one value, e.g. `{}`", value::example(decl)),
            ));
        };
        let offset = entry.span().offset();
        if let Some(name) = entry.name() {
            return Err(self.shape_error(
                &key,
                offset,
                format!(
                    "`{key}` takes a plain value, not the property `{}=`",
                    name.value()
                ),
                format!("write it as `{}`", value::example(decl)),
            ));
        }
        let raw = entry.value();
        let value = value::from_kdl(decl, raw).map_err(|why| {
            ConfigError::new(
                ErrorKind::InvalidValue,
                Diagnostic::error(
                    "config.invalid-value",
                    format!("invalid value for `{key}` in {}", self.path.display()),
                    why,
                    format!("set `{}` to {}", decl.key, value::expected(decl)),
                )
                .with_value(self.source_text(entry.span().offset(), entry.span().len()))
                .with_surface(self.surface(offset))
                .with_field(key.clone())
                .with_example(value::example(decl)),
            )
        })?;
        let at = self.at(offset);
        if let Some(first) = self.seen.insert(decl.key, at) {
            return Err(ConfigError::new(
                ErrorKind::Duplicate,
                Diagnostic::error(
                    "config.duplicate",
                    format!("`{key}` is set twice in {}", self.path.display()),
                    format!(
                        "it was first set at line {}, column {}; two settings in one file leave it unclear which was meant",
                        first.line, first.column
                    ),
                    "delete one of the two settings",
                )
                .with_value(self.source_text(entry.span().offset(), entry.span().len()))
                .with_surface(self.surface(offset))
                .with_field(key),
            ));
        }
        self.out.push(FileSetting { decl, value, at });
        Ok(())
    }

    fn shape_error(&self, key: &str, offset: usize, why: String, next: String) -> ConfigError {
        ConfigError::new(
            ErrorKind::InvalidValue,
            Diagnostic::error(
                "config.invalid-shape",
                format!(
                    "`{key}` is written the wrong way in {}",
                    self.path.display()
                ),
                why,
                next,
            )
            .with_surface(self.surface(offset))
            .with_field(key.to_owned()),
        )
    }

    fn unknown(&mut self, key: &str, section: &str, offset: usize) -> Result<(), ConfigError> {
        let policy = options::section(section).map_or(UnknownPolicy::Reject, |s| s.policy);
        let leaf = key.rsplit_once('.').map_or(key, |(_, l)| l);
        let known = known_keys(section);
        let suggestion = suggest::closest(leaf, known.iter().map(String::as_str));
        let where_ = if section.is_empty() {
            "the top level".to_owned()
        } else {
            format!("section `{section}`")
        };
        let why = format!(
            "{where_} does not declare `{leaf}` and {} unknown keys (it declares: {})",
            match policy {
                UnknownPolicy::Warn => "ignores",
                UnknownPolicy::Reject => "rejects",
            },
            known.join(", ")
        );
        let next = match suggestion {
            Some(s) => format!("did you mean `{s}`? Fix the spelling, or remove the line"),
            None => "remove the line, or check `smith config show` for the options that exist"
                .to_owned(),
        };
        let severity = match policy {
            UnknownPolicy::Warn => Severity::Warning,
            UnknownPolicy::Reject => Severity::Error,
        };
        let diag = Diagnostic::new(
            severity,
            "config.unknown-key",
            format!("unknown key `{key}` in {}", self.path.display()),
            why,
            next,
        )
        .with_value(leaf)
        .with_surface(self.surface(offset))
        .with_field(key.to_owned());
        match policy {
            UnknownPolicy::Warn => {
                self.warnings.push(diag);
                Ok(())
            }
            UnknownPolicy::Reject => Err(ConfigError::new(ErrorKind::UnknownKey, diag)),
        }
    }
}

/// The node names a section declares: its options' leaves and its
/// sub-sections' last names.
fn known_keys(section: &str) -> Vec<String> {
    let mut out: Vec<String> = options::ALL
        .iter()
        .filter(|d| d.section() == section)
        .map(|d| d.leaf().to_owned())
        .collect();
    for s in options::SECTIONS {
        let parent = s.path.rsplit_once('.').map_or("", |(p, _)| p);
        if !s.path.is_empty() && parent == section {
            out.push(
                s.path
                    .rsplit_once('.')
                    .map_or(s.path, |(_, l)| l)
                    .to_owned(),
            );
        }
    }
    out
}

fn section_example(section: &str) -> String {
    match options::ALL.iter().find(|d| d.section() == section) {
        Some(decl) => format!("`{}`", value::example(decl)),
        None => format!("`{section} {{ ... }}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> (Vec<FileSetting>, Vec<Diagnostic>) {
        let mut w = Vec::new();
        let (s, _) = parse(text, Path::new("/c.kdl"), &mut w).unwrap();
        (s, w)
    }

    #[test]
    fn reads_top_level_and_section_options_with_positions() {
        let (s, w) = parse_ok("model \"m1\"\ntui {\n    theme \"dark\"\n    mouse #false\n}\n");
        assert!(w.is_empty());
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].decl.key, "model");
        assert_eq!(s[0].at, LineCol { line: 1, column: 7 });
        assert_eq!(s[1].decl.key, "tui.theme");
        assert_eq!(s[1].value, Value::Str("dark".into()));
        assert_eq!(
            s[1].at,
            LineCol {
                line: 3,
                column: 11
            }
        );
        assert_eq!(s[2].value, Value::Bool(false));
    }

    #[test]
    fn warn_sections_warn_and_reject_sections_fail() {
        let (s, w) = parse_ok("tui {\n    theem \"dark\"\n}\n");
        assert!(s.is_empty());
        assert_eq!(w.len(), 1);
        assert!(w[0].next().contains("did you mean `theme`?"));
        let mut w = Vec::new();
        let err = parse(
            "net {\n    head-timeout 5\n}\n",
            Path::new("/c.kdl"),
            &mut w,
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnknownKey);
        assert!(err.diagnostic().next().contains("head-timeout-s"));
    }

    #[test]
    fn shapes_are_checked() {
        let mut w = Vec::new();
        for text in [
            "model \"a\" \"b\"\n",
            "model x=1\n",
            "tui \"x\"\n",
            "model { a 1; }\n",
            "model \"a\"\nmodel \"b\"\n",
        ] {
            assert!(parse(text, Path::new("/c.kdl"), &mut w).is_err(), "{text}");
        }
    }
}
