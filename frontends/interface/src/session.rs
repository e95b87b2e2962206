//! A session as the interface shows it: a resumed history, the plugin
//! intents kept in it, the tree `/branch` opens and the leaf it selects.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use smith_store::{EntryKind, Session, Store};
use smith_tui::{App, Overlay, Tree, TreeRow};

use super::host;

/// The id of the first user message (`user`) or assistant message entry on
/// `session`'s selected branch after entry `after` (from the branch's start
/// when `None`, or when `after` is not on it).
pub(super) fn next_message_id(session: &Session, after: Option<u64>, user: bool) -> Option<u64> {
    let want = if user {
        EntryKind::UserMessage
    } else {
        EntryKind::AssistantMessage
    };
    let mut found = None;
    for r in session.branch().iter().rev() {
        if Some(r.id) == after {
            break;
        }
        if r.entry_kind() == want {
            found = Some(r.id);
        }
    }
    found
}

/// Shows the plugin intents kept in `session` (policy `persist`, from a
/// frontend that could not show them) as notice lines, oldest first.
pub(super) fn show_kept_intents(app: &mut App, session: &Session) {
    match host::extensions::kept_intents(session) {
        Ok(lines) => {
            for line in lines {
                app.notice(&line);
            }
        }
        Err(message) => app.error(&message),
    }
}

/// Fills the transcript from a resumed session without copying its text:
/// the selected branch from the compaction boundary on becomes
/// session-backed entries over a snapshot of the session (its records; the
/// payload arena is shared, not copied), preceded by the compaction's
/// summary when there is one.
pub(super) fn show_history(app: &mut App, session: &Session, summary: Option<&str>) {
    let entries = Arc::new(smith_tui::session::SessionEntries::new(session.clone()));
    if let Err(err) = app.show_session(entries, session.compaction_boundary(), summary) {
        app.error(&format!(
            "the session's history could not be shown past this point: {err}"
        ));
    }
}

/// The user text nearest before record `index` on its path to the root
/// (its own text when it is a user message), cut to `max` characters;
/// empty when there is none or it cannot be read.
pub(super) fn user_text_before(session: &Session, index: usize, max: usize) -> String {
    let Some(record) = session
        .ancestors(index)
        .find(|r| r.entry_kind() == EntryKind::UserMessage)
    else {
        return String::new();
    };
    let Ok(content) = session.content(record) else {
        return String::new();
    };
    let mut json = String::new();
    if smith_codec::json::from_cbor(&content, &mut json).is_err() {
        return String::new();
    }
    let text = serde_json::from_str::<serde_json::Value>(&json)
        .ok()
        .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_default();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

/// The session's tree for the branch overlay: one row per leaf and per
/// fork point (an entry with more than one child), depth-first in append
/// order, each nested under the fork point it grows from. Chains of
/// single children are folded into the row they lead to, so a session
/// of a million entries on one branch is one row. Reads records only,
/// except for the one user message each row quotes.
pub(super) fn branch_rows(session: &Session) -> Vec<TreeRow> {
    use smith_store::NONE;
    let records = session.records();
    let n = records.len();
    let mut first_child = vec![NONE; n];
    let mut next_sibling = vec![NONE; n];
    let mut children = vec![0u32; n];
    let mut roots = Vec::new();
    // Backwards, so each child list comes out in append order.
    for i in (0..n).rev() {
        let p = records[i].parent_index;
        if p == NONE || p as usize >= n {
            roots.push(i);
        } else {
            next_sibling[i] = first_child[p as usize];
            first_child[p as usize] = i as u32;
            children[p as usize] += 1;
        }
    }
    let current = session.leaf().map(|l| l.id);
    let on_branch: std::collections::HashSet<u64> = session.branch().iter().map(|r| r.id).collect();
    let mut rows = Vec::new();
    // Depth-first without recursion (a branch can be a million deep).
    let mut stack: Vec<(usize, u16)> = roots.into_iter().map(|r| (r, 0)).collect();
    while let Some((start, depth)) = stack.pop() {
        let mut i = start;
        while children[i] == 1 {
            i = first_child[i] as usize;
        }
        let r = &records[i];
        let quote = user_text_before(session, i, 40);
        let what = if children[i] == 0 {
            let depth_entries = session.ancestors(i).count();
            format!("{depth_entries} entries")
        } else {
            format!("fork, {} branches", children[i])
        };
        let mut label = format!("entry {} · {what}", r.id);
        if !quote.is_empty() {
            label.push_str(&format!(" · “{quote}”"));
        }
        if on_branch.contains(&r.id) && Some(r.id) != current {
            label.push_str(" · on the selected branch");
        }
        rows.push(TreeRow {
            depth,
            label,
            arg: r.id.to_string(),
            current: Some(r.id) == current,
        });
        let mut kids = Vec::with_capacity(children[i] as usize);
        let mut c = first_child[i];
        while c != NONE {
            kids.push(c as usize);
            c = next_sibling[c as usize];
        }
        for k in kids.into_iter().rev() {
            stack.push((k, depth + 1));
        }
    }
    rows
}

/// The overlay `/branch` opens for `session`.
pub(super) fn branch_overlay(session: &Session) -> Overlay {
    let rows = branch_rows(session);
    let selected = rows.iter().position(|r| r.current).unwrap_or(0);
    Overlay::Tree(Tree {
        title: " branches · enter selects ".to_owned(),
        command: "branch".to_owned(),
        rows,
        selected,
    })
}

/// Selects entry `entry` of session `id` as its leaf through the store (a
/// leaf-switch entry under it), so the next runtime resumes that branch.
pub(super) fn select_leaf(root: &Path, id: &str, entry: u64) -> anyhow::Result<()> {
    let store = Store::open(root)?;
    let mut session = store
        .load(id)
        .with_context(|| format!("could not open session {id} to switch its branch"))?;
    store
        .select_leaf(&mut session, entry, None)
        .with_context(|| format!("could not select entry {entry} as the leaf of session {id}"))?;
    Ok(())
}
