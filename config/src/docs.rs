//! `docs/config.md`, generated from the option table.

use std::fmt::Write as _;

use crate::options::{self, Kind, Lit};
use crate::value::{self, Value};

/// Renders `docs/config.md` from [`options::ALL`] and [`options::SECTIONS`].
///
/// The file in the repository must equal this output; a test compares them
/// and `SMITH_BLESS=1` rewrites the file.
pub fn render_markdown() -> String {
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "# Configuration\n");
    let _ = writeln!(
        w,
        "<!-- Generated from config/src/options.rs by smith_config::docs::render_markdown. \
         Do not edit by hand: change the declarations and run \
         `SMITH_BLESS=1 cargo test -p smith-config`. -->\n"
    );
    w.push_str(INTRO);
    for section in options::SECTIONS {
        let title = if section.path.is_empty() {
            "Top level".to_owned()
        } else {
            format!("`{}`", section.path)
        };
        let _ = writeln!(w, "\n## {title}\n");
        let _ = writeln!(w, "{}\n", section.help);
        let _ = writeln!(
            w,
            "Unknown keys here: **{}** ({}).",
            section.policy, section.policy_reason
        );
        for decl in options::ALL.iter().filter(|d| d.section() == section.path) {
            let _ = writeln!(w, "\n### `{}`\n", decl.key);
            let _ = writeln!(w, "{}\n", decl.help);
            let _ = writeln!(w, "| | |");
            let _ = writeln!(w, "|---|---|");
            let _ = writeln!(w, "| type | {} |", kind_cell(decl.kind));
            let default = match decl.default {
                Some(lit) => format!("`{}`", lit_text(lit)),
                None => format!("unset: {}", decl.unset),
            };
            let _ = writeln!(w, "| default | {default} |");
            let _ = writeln!(w, "| flag | `{} <VALUE>` |", decl.flag);
            let _ = writeln!(w, "| environment | `{}` |", decl.env);
            let _ = writeln!(w, "| KDL | `{}` |", value::example(decl));
        }
    }
    out
}

fn kind_cell(kind: Kind) -> String {
    match kind {
        Kind::Enum(choices) => format!(
            "one of {}",
            choices
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.describe(),
    }
}

fn lit_text(lit: Lit) -> String {
    Value::from_lit(lit).to_string()
}

const INTRO: &str = r#"smith reads its configuration from KDL files, the environment and the
command line. Every option below is declared once, in `config/src/options.rs`;
that one declaration gives its KDL key, flag, environment variable, type,
default and help, and this page is generated from it.

## Files

- **User configuration**: `$SMITH_HOME/config.kdl` when `SMITH_HOME` is set;
  otherwise `$XDG_CONFIG_HOME/smith/config.kdl`, falling back to
  `~/.config/smith/config.kdl` (also on macOS); on Windows
  `%APPDATA%\smith\config\config.kdl`.
- **Project configuration**: `.smith/config.kdl`, found by searching the
  current directory and its parents. The search stops at the repository root
  (the first directory containing `.git`) and never looks at the home
  directory itself. It applies only once the project is trusted (below).
- **Hook commands** (smith/hooks): `hooks.json` in the same folder as the
  user configuration, and in a trusted project `.claude/settings.json`,
  `.claude/settings.local.json` and `.smith/hooks.json`, in Claude Code's
  JSON hooks format ([plugins.md](plugins.md#hooks-smithhooks)).

An option is a node with one value; a section is a node with a block:

```kdl
// ~/.config/smith/config.kdl
model "small"
tui {
    theme "dark"
    confirm-exit #false
}
net {
    head-timeout-s 90
}
```

Strings may be bare words (`dark`) or quoted (`"dark"`); booleans are `#true`
and `#false`; numbers are plain integers. Paths must be absolute or start
with `~/`.

## Precedence

Each option takes the value from the highest layer that sets it, lowest
first:

1. product defaults (this page),
2. built-in plugin defaults,
3. plugin contributions — including changes plugin handlers request at
   runtime, which are never written to any file,
4. user configuration,
5. trusted project configuration,
6. environment variables (`SMITH_*`),
7. command-line flags.

`smith config show [KEY] [--sources] [--json]` prints each value with the
layer it came from (`--sources` lists every layer that set it, winner first).
The option flags listed below are accepted by `smith config show`, so
`smith config show model --model big` shows the override taking effect.

Only `smith config set KEY VALUE [--project]` writes configuration. It
changes the one value in place and keeps every comment and the file's
formatting; a missing option is added in its section, indented like its
neighbours.

## Plugin contributions and plugin options

An extension plugin's `config-value` contributions join the precedence
above: a value whose key is an option on this page is a default at level 2
(smith's built-in plugins) or 3 (other plugins). Any other key declares an
option of the plugin's own, typed by its JSON Schema, described by its
description, with its default at the plugin's level. `smith config show`
lists plugin options after these, with the declaring plugin as their
source (`plugin_options` in `--json`). Only the plugin that declared an
option changes it (`config-set`, to a value its schema accepts), for the
running runtime only: nothing is written to a file. Configuration files,
variables and flags set only the options on this page.

## Errors and unknown keys

An invalid value stops loading with a diagnostic naming where it came from
(`file:line:column`, the environment variable or the flag), the option's key,
why it is invalid and an example of a valid setting. A key a section does not
declare is handled by that section's policy, listed with each section below:
**warn** loads the rest and prints a warning, **reject** fails; both suggest
the closest declared key.

A file that nests blocks (`name { ... }`) or block comments more than 64
levels deep is refused before it is parsed (`config.too-deep`, naming the
file and the line where the 65th level opens); no option needs more than a
few levels, and the limit keeps a hostile file from exhausting the stack.
Plugin manifests (`plugin.kdl`) have the same limit.

Configuration and permission-rules files are read only when they are
regular files (or links to one) of at most 16 MiB: a FIFO, socket, device
or folder is refused without being opened (`config.not-a-file`), and a
larger file by its size, unread (`config.too-large`).

## Project trust

A project's `.smith` directory (its `config.kdl`, its `plugins/` and anything
else smith would run for it) is ignored — with a warning saying how to trust
it — until you run `smith trust [PATH]`. Trust records the project's
canonical path and a SHA-256 digest of everything under `.smith` (files
are hashed in chunks, so a huge file costs time, not memory; a FIFO,
socket or device counts by its name and kind and is never opened)
in `<data dir>/trust.json` (mode 0600, written atomically). Any change to
`.smith` makes the project untrusted again until you re-run `smith trust`.
No flag grants trust on your behalf. `smith config set --project` on a
trusted, unchanged project re-records the digest after its own edit.

## Permission rules

A `permissions` block holds rules the built-in plugin smith/permissions
applies to every tool call, before the approval mode (`approval` below;
docs/security.md, "Approval modes and permission rules"):

```kdl
permissions {
    allow "bash" command="git status"
    allow "bash" command="cargo *"
    ask "write" path="src/**"
    deny "*" path=".env"
    deny "bash" command="rm -rf *"
}
```

Each rule is `allow`, `ask` or `deny`, then the tool's name (`*`: every
tool), then at most one pattern:

- `path="GLOB"` matches the path a call names (`write`, `edit`, `read`,
  `ls`, ... and plugin tools with a `path` argument), normalized and with
  symbolic links resolved, so a link is judged by its target. `*` and `?`
  stop at `/`, `**` crosses folders, `\` makes the next character
  literal. A glob is relative to the project root and matches only paths
  inside it; one without `/` matches a name at any depth (`.env` matches
  `config/.env`); `./` anchors it at the root; one starting with `/`
  matches absolute paths (outside the project too). A glob matching a
  folder matches everything in it.
- `command="GLOB"` (for `bash` or `*`) matches each command of a `bash`
  call: the command line is split, quotes respected, at `&&`, `||`, `;`,
  `|`, `&`, newlines, subshells, command substitutions (`$( )`, backticks)
  and process substitutions (`<( )`, `>( )`). `*` matches any text.
- Without a pattern the rule covers every call of the tool.

A deny rule blocks a call when it matches the call or any one of its
commands, in every approval mode (`full` and `--yes` included) and for
read-only tools too. Allow rules allow a `bash` call only when every one of
its commands is allowed. Then ask rules ask; read-only tools run; and the
approval mode decides the rest.

The user file's rules apply everywhere; a project's `.smith/config.kdl`
rules apply only while the project is trusted. A rule that is not one of
these shapes stops loading with a diagnostic naming the file, the line, the
rule and what is valid. Answering a question "always in this project"
appends an exact allow rule to the trusted project's file and re-records
its trust digest.

## MCP servers

An `mcp` block declares the Model Context Protocol servers whose tools the
built-in plugin smith/mcp offers to the model (docs/mcp.md, "smith as an
MCP client"):

```kdl
mcp {
    server "files" {
        command "npx"
        args "-y" "@modelcontextprotocol/server-filesystem" "/srv/docs"
        env "LOG_LEVEL" "debug"
    }
}
```

A server has `command` (with `args`, `env "NAME" "VALUE"`, `cwd`) or
`url` (with `header "NAME" "VALUE"`). The user file's servers start
everywhere; a project's only while the project is trusted. A server that
is not one of these shapes stops loading with a diagnostic naming the
file, the line and the fix.

## Directories

| | `SMITH_HOME` set | Linux, BSD | macOS | Windows |
|---|---|---|---|---|
| config | `$SMITH_HOME` | `$XDG_CONFIG_HOME/smith` or `~/.config/smith` | as Linux | `%APPDATA%\smith\config` |
| data | `$SMITH_HOME/data` | `$XDG_DATA_HOME/smith` or `~/.local/share/smith` | `~/Library/Application Support/smith` | `%LOCALAPPDATA%\smith\data` |
| cache | `$SMITH_HOME/cache` | `$XDG_CACHE_HOME/smith` or `~/.cache/smith` | `~/Library/Caches/smith` | `%LOCALAPPDATA%\smith\cache` |
| state | `$SMITH_HOME/state` | `$XDG_STATE_HOME/smith` or `~/.local/state/smith` | `~/Library/Application Support/smith/state` | `%LOCALAPPDATA%\smith\state` |

# Options
"#;
