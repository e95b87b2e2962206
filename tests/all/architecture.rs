//! docs/architecture.md's crate table is checked against the workspace as
//! cargo sees it: every member has exactly one row, in the folder it really
//! lives in, and the row's "depends on" column names exactly the workspace
//! crates the member depends on (normal dependencies; dev and build
//! dependencies are not part of the layering). The "built on" column names
//! outside crates, each of which must really be a normal dependency.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// One row of the crate table.
#[derive(Debug)]
struct Row {
    folder: String,
    depends_on: BTreeSet<String>,
    built_on: BTreeSet<String>,
}

/// What cargo says about one workspace member.
#[derive(Debug)]
struct Member {
    folder: String,
    workspace_deps: BTreeSet<String>,
    other_deps: BTreeSet<String>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Splits a cell like "`smith-codec`, `smith-store`" into names; "—" is none.
fn names(cell: &str) -> BTreeSet<String> {
    cell.split(',')
        .map(|name| name.trim().trim_matches('`').trim().to_owned())
        .filter(|name| !name.is_empty() && name != "—")
        .collect()
}

fn table() -> BTreeMap<String, Row> {
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let section = text
        .split("\n## Crates\n")
        .nth(1)
        .expect("docs/architecture.md has a `## Crates` section");
    let mut lines = section.lines().skip_while(|line| !line.starts_with('|'));
    let header: Vec<&str> = lines
        .next()
        .expect("the Crates section holds a table")
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        ["", "folder", "crate", "owns", "depends on", "built on", ""],
        "the crate table's columns changed; this test reads them by position"
    );
    let mut rows = BTreeMap::new();
    for line in lines.skip(1).take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 7, "a crate table row has five cells: {line}");
        // "`smith-codec`", or "`smith` (binary)": the name is in backticks.
        let name = cells[2]
            .split('`')
            .nth(1)
            .unwrap_or_else(|| panic!("the crate cell has its name in backticks: {line}"))
            .to_owned();
        let row = Row {
            folder: cells[1].trim_matches('`').trim_end_matches('/').to_owned(),
            depends_on: names(cells[4]),
            built_on: names(cells[5]),
        };
        assert!(
            rows.insert(name.clone(), row).is_none(),
            "crate {name} has two rows in docs/architecture.md"
        );
    }
    rows
}

fn members() -> BTreeMap<String, Member> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let workspace_root = Path::new(meta["workspace_root"].as_str().unwrap());
    let packages = meta["packages"].as_array().unwrap();
    let member_names: BTreeSet<String> = packages
        .iter()
        .map(|package| package["name"].as_str().unwrap().to_owned())
        .collect();
    let mut members = BTreeMap::new();
    for package in packages {
        let name = package["name"].as_str().unwrap().to_owned();
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let dir = manifest
            .parent()
            .unwrap()
            .strip_prefix(workspace_root)
            .unwrap();
        // The binary's manifest is the workspace's own; its code is in src/.
        let folder = if dir.as_os_str().is_empty() {
            "src".to_owned()
        } else {
            dir.to_string_lossy().replace('\\', "/")
        };
        let mut workspace_deps = BTreeSet::new();
        let mut other_deps = BTreeSet::new();
        for dep in package["dependencies"].as_array().unwrap() {
            if !dep["kind"].is_null() {
                continue; // dev and build dependencies
            }
            let dep_name = dep["name"].as_str().unwrap().to_owned();
            if member_names.contains(&dep_name) {
                workspace_deps.insert(dep_name);
            } else {
                other_deps.insert(dep_name);
            }
        }
        members.insert(
            name,
            Member {
                folder,
                workspace_deps,
                other_deps,
            },
        );
    }
    members
}

#[test]
fn the_crate_table_matches_the_workspace() {
    let table = table();
    let members = members();
    let mut differences = Vec::new();
    for name in members.keys() {
        if !table.contains_key(name) {
            differences.push(format!("workspace member {name} has no row"));
        }
    }
    for name in table.keys() {
        if !members.contains_key(name) {
            differences.push(format!("row {name} is not a workspace member"));
        }
    }
    for (name, row) in &table {
        let Some(member) = members.get(name) else {
            continue;
        };
        if row.folder != member.folder {
            differences.push(format!(
                "{name}: the table says folder `{}/`, cargo says `{}/`",
                row.folder, member.folder
            ));
        }
        let missing: Vec<_> = member.workspace_deps.difference(&row.depends_on).collect();
        let extra: Vec<_> = row.depends_on.difference(&member.workspace_deps).collect();
        if !missing.is_empty() || !extra.is_empty() {
            differences.push(format!(
                "{name}: \"depends on\" lacks {missing:?} and names {extra:?} that it does not depend on"
            ));
        }
        let not_deps: Vec<_> = row.built_on.difference(&member.other_deps).collect();
        if !not_deps.is_empty() {
            differences.push(format!(
                "{name}: \"built on\" names {not_deps:?}, which are not its normal dependencies"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "docs/architecture.md's crate table differs from `cargo metadata`; fix the table (or the \
         dependency) so that they agree:\n  {}",
        differences.join("\n  ")
    );
}
