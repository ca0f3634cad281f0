//! `tierscope render --at N [--diff-prev]`: the rendered context at request N, chunk by chunk
//! with episode and tier labels; `--diff-prev` marks the divergence point against the previous
//! request of the same conversation and shows what was there before.

use anyhow::Context;
use clap::Args;

use super::replay::PolicyArgs;
use super::LoadArgs;
use tierscope_engine::replay::{self, Input, RenderedChunk, RenderedContext};
use tierscope_engine::text::sanitize_for_terminal;

#[derive(Debug, Clone, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Request number (from 0).
    #[arg(long)]
    pub at: usize,
    /// Mark the divergence point against the previous request and show what changed there.
    #[arg(long)]
    pub diff_prev: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn label(c: &RenderedChunk) -> String {
    match (&c.episode, c.tier) {
        (Some(e), Some(t)) => format!(
            "{e} {t}{}",
            if c.kind == "active" { " (active)" } else { "" }
        ),
        _ => c.kind.clone(),
    }
}

fn write_chunk(out: &mut String, c: &RenderedChunk, mark: &str) {
    out.push_str(&format!(
        "{mark}── {} · {} tokens{} ──\n",
        label(c),
        c.tokens,
        c.message_id
            .as_deref()
            .map(|m| format!(" · {m}"))
            .unwrap_or_default()
    ));
    for line in sanitize_for_terminal(&c.text).lines() {
        out.push_str(mark);
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
}

/// The context as text.
pub fn text(ctx: &RenderedContext, diff_prev: bool) -> String {
    let mut out = format!(
        "request {} · {} tokens · {} chunks\n",
        ctx.request,
        ctx.tokens,
        ctx.chunks.len()
    );
    for (i, c) in ctx.chunks.iter().enumerate() {
        if diff_prev && ctx.divergence_index == Some(i) {
            out.push_str(&format!(
                ">>>>>> divergence against request {}: common prefix {} tokens; {} chunks there before:\n",
                ctx.prev_request.map_or("-".into(), |p| p.to_string()),
                ctx.divergence,
                ctx.replaced.len()
            ));
            for r in &ctx.replaced {
                write_chunk(&mut out, r, "- ");
            }
            out.push_str(">>>>>> now:\n");
        }
        let mark = if diff_prev && c.changed_since_prev {
            "+ "
        } else {
            ""
        };
        write_chunk(&mut out, c, mark);
    }
    if diff_prev && ctx.divergence_index == Some(ctx.chunks.len()) {
        out.push_str(&format!(
            ">>>>>> identical to request {} ({} tokens)\n",
            ctx.prev_request.map_or("-".into(), |p| p.to_string()),
            ctx.divergence
        ));
    }
    out
}

pub fn run(a: &RenderArgs) -> anyhow::Result<()> {
    let policy = a.policy.resolve()?;
    let session =
        tierscope_engine::loaded::load(&a.load.options()).context("loading the session")?;
    let ctx = replay::render_at(&Input::from(&session), &policy, a.policy.budget, a.at)?;
    if a.json {
        super::output::print_json(&ctx)
    } else {
        crate::cli::output::write_stdout(&text(&ctx, a.diff_prev))?;
        Ok(())
    }
}
