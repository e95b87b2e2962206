//! Splits a shell command line into the commands it runs.

/// The commands `line` runs, in order, each trimmed: the line split at
/// `&&`, `||`, `;`, `|`, `|&`, `&`, newlines and subshell parentheses, and
/// the contents of command substitutions (`$( )`, backticks) and process
/// substitutions (`<( )`, `>( )`) as commands of their own (the command
/// containing one keeps it as written). Quotes are respected: separators
/// inside `'…'` or `"…"` do not split, though a substitution inside `"…"`
/// still runs. Redirections such as `2>&1` and `&>` are not separators;
/// comments are dropped.
pub fn split_commands(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut pos = 0;
    split_until(&chars, &mut pos, None, &mut out);
    out
}

fn push(current: &mut String, out: &mut Vec<String>) {
    let trimmed = current.trim();
    if !trimmed.is_empty() {
        out.push(trimmed.to_owned());
    }
    current.clear();
}

/// Splits from `pos` until `close` (or the end), leaving `pos` on the
/// closing character.
fn split_until(chars: &[char], pos: &mut usize, close: Option<char>, out: &mut Vec<String>) {
    let mut current = String::new();
    let mut word_start = true;
    while *pos < chars.len() {
        let c = chars[*pos];
        let next = chars.get(*pos + 1).copied();
        if Some(c) == close {
            push(&mut current, out);
            return;
        }
        match c {
            '\\' => {
                current.push(c);
                if let Some(n) = next {
                    current.push(n);
                }
                *pos += 2;
                word_start = false;
                continue;
            }
            '\'' => {
                let start = *pos;
                *pos += 1;
                while *pos < chars.len() && chars[*pos] != '\'' {
                    *pos += 1;
                }
                *pos = (*pos + 1).min(chars.len());
                current.extend(&chars[start..*pos]);
                word_start = false;
                continue;
            }
            '"' => {
                let start = *pos;
                *pos += 1;
                while *pos < chars.len() && chars[*pos] != '"' {
                    match (chars[*pos], chars.get(*pos + 1)) {
                        ('\\', _) => *pos += 2,
                        ('$', Some('(')) => {
                            *pos += 2;
                            substitution(chars, pos, ')', out);
                        }
                        ('`', _) => {
                            *pos += 1;
                            substitution(chars, pos, '`', out);
                        }
                        _ => *pos += 1,
                    }
                }
                *pos = (*pos + 1).min(chars.len());
                current.extend(&chars[start..(*pos).min(chars.len())]);
                word_start = false;
                continue;
            }
            '`' => {
                let start = *pos;
                *pos += 1;
                substitution(chars, pos, '`', out);
                current.extend(&chars[start..*pos]);
                word_start = false;
                continue;
            }
            '$' | '<' | '>' if next == Some('(') => {
                let start = *pos;
                *pos += 2;
                substitution(chars, pos, ')', out);
                current.extend(&chars[start..*pos]);
                word_start = false;
                continue;
            }
            '(' => {
                push(&mut current, out);
                *pos += 1;
                substitution(chars, pos, ')', out);
                word_start = true;
                continue;
            }
            ')' => {
                // Unmatched at this level (inside backticks, or a `case`
                // pattern): a separator.
                push(&mut current, out);
            }
            '#' if word_start => {
                while *pos < chars.len() && chars[*pos] != '\n' {
                    *pos += 1;
                }
                continue;
            }
            ';' | '\n' => push(&mut current, out),
            '|' => {
                push(&mut current, out);
                if matches!(next, Some('|' | '&')) {
                    *pos += 1;
                }
            }
            '&' => {
                let redirect = current.ends_with(['>', '<']) || next == Some('>');
                if redirect {
                    current.push(c);
                } else {
                    push(&mut current, out);
                    if next == Some('&') {
                        *pos += 1;
                    }
                }
            }
            c => current.push(c),
        }
        word_start = c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')' | '\n');
        *pos += 1;
    }
    push(&mut current, out);
}

/// The commands of a substitution that started before `pos`, up to and
/// past its closing `close`.
fn substitution(chars: &[char], pos: &mut usize, close: char, out: &mut Vec<String>) {
    split_until(chars, pos, Some(close), out);
    if *pos < chars.len() {
        *pos += 1;
    }
}

/// `command` without its leading variable assignments (`FOO=1 rm x` is
/// judged as `rm x` too).
pub(crate) fn without_assignments(command: &str) -> &str {
    let mut rest = command.trim_start();
    loop {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_end];
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        if !is_assignment || word_end == rest.len() {
            return rest;
        }
        rest = rest[word_end..].trim_start();
    }
}
