//! `smith context [--json]`: what every request carries before the
//! conversation, measured.
//!
//! Loads the enabled extension plugins as a run does, assembles the system
//! prompt for the current folder from their fragments (static ones and the
//! per-turn ones of a first turn) and lists each fragment — source plugin,
//! id, order, size in bytes, estimated tokens, static or per-turn — then
//! each tool definition's share (the built-in tools, then each plugin's),
//! and the totals. Tokens are estimated as bytes / 4, rounded up.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use serde_json::json;
use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_host::context::{self, PieceReport, ToolShare, estimate_tokens};

/// `smith context`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `smith context`.
///
/// # Errors
///
/// When the current folder cannot be read or standard output cannot be
/// written; plugins that cannot be loaded are warnings.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir()?;
    // The instances belong to no session: their host effects are kept in
    // memory only.
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (mut plugins, mut warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    let mut assembler = context::assembler(&cwd, &plugins);
    warnings.extend(context::refresh(&mut assembler, &mut plugins, 0));
    let prompt = assembler.prompt();
    let pieces = assembler.pieces();
    let tools = context::tool_shares(&plugins);
    let prompt_size = (prompt.len(), estimate_tokens(prompt.len()));
    let tool_bytes: usize = tools.iter().map(|t| t.bytes).sum();
    let tool_size = (tool_bytes, estimate_tokens(tool_bytes));
    let total = (
        prompt_size.0 + tool_size.0,
        estimate_tokens(prompt_size.0 + tool_size.0),
    );
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = json!({
            "cwd": cwd.display().to_string(),
            "fragments": pieces.iter().map(|p| json!({
                "plugin": p.plugin,
                "id": p.id,
                "stable_id": format!("{}/{}", p.plugin, p.id),
                "order": p.order,
                "bytes": p.bytes,
                "tokens": p.tokens,
                "kind": kind(p),
            })).collect::<Vec<_>>(),
            "prompt": {"bytes": prompt_size.0, "tokens": prompt_size.1},
            "tools": tools.iter().map(|t| json!({
                "source": t.source,
                "name": t.name,
                "bytes": t.bytes,
                "tokens": t.tokens,
            })).collect::<Vec<_>>(),
            "tools_total": {"bytes": tool_size.0, "tokens": tool_size.1},
            "total": {"bytes": total.0, "tokens": total.1},
            "warnings": warnings,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(0);
    }
    for warning in &warnings {
        smith_host::extensions::warn(warning);
    }
    writeln!(
        out,
        "Context for {} (tokens estimated as bytes / 4)",
        cwd.display()
    )?;
    writeln!(out)?;
    writeln!(out, "Prompt fragments, in prompt order:")?;
    fragment_lines(&mut out, &pieces)?;
    writeln!(
        out,
        "  system prompt: {} bytes, {} tokens",
        prompt_size.0, prompt_size.1
    )?;
    writeln!(out)?;
    writeln!(out, "Tool definitions (name, description, parameters):")?;
    tool_lines(&mut out, &tools)?;
    writeln!(
        out,
        "  tool definitions: {} bytes, {} tokens",
        tool_size.0, tool_size.1
    )?;
    writeln!(out)?;
    writeln!(out, "Total: {} bytes, {} tokens", total.0, total.1)?;
    Ok(0)
}

fn kind(piece: &PieceReport) -> &'static str {
    if piece.dynamic { "dynamic" } else { "static" }
}

fn fragment_lines(out: &mut impl std::io::Write, pieces: &[PieceReport]) -> std::io::Result<()> {
    if pieces.is_empty() {
        return writeln!(out, "  (none: no plugin contributes prompt fragments)");
    }
    let ids: Vec<String> = pieces
        .iter()
        .map(|p| format!("{}/{}", p.plugin, p.id))
        .collect();
    let width = ids.iter().map(String::len).max().unwrap_or(0);
    for (piece, id) in pieces.iter().zip(&ids) {
        writeln!(
            out,
            "  {id:<width$}  order {:>4}  {:<7}  {:>6} bytes  {:>5} tokens",
            piece.order,
            kind(piece),
            piece.bytes,
            piece.tokens
        )?;
    }
    Ok(())
}

fn tool_lines(out: &mut impl std::io::Write, tools: &[ToolShare]) -> std::io::Result<()> {
    let names: Vec<String> = tools
        .iter()
        .map(|t| format!("{} ({})", t.name, t.source))
        .collect();
    let width = names.iter().map(String::len).max().unwrap_or(0);
    for (tool, name) in tools.iter().zip(&names) {
        writeln!(
            out,
            "  {name:<width$}  {:>6} bytes  {:>5} tokens",
            tool.bytes, tool.tokens
        )?;
    }
    Ok(())
}
