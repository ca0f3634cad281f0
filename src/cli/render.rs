//! `tierscope render --at N [--diff-prev]`: the rendered context at request N, chunk by chunk
//! with episode and tier labels; `--diff-prev` marks the divergence point against the previous
//! request of the same conversation and shows what was there before.

use anyhow::Context;
use clap::Args;

use super::replay::PolicyArgs;
use super::report::{self, Format, Text};
use super::LoadArgs;
use tierscope_engine::replay::{self, Input, RenderedChunk, RenderedContext};

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
    #[command(flatten)]
    pub summaries: super::flat_summaries::SummaryArgs,
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

fn write_chunk(out: &mut Text, c: &RenderedChunk, mark: &str) {
    out.line(format!(
        "{mark}── {} · {} tokens{} ──",
        label(c),
        c.tokens,
        c.message_id
            .as_deref()
            .map(|m| format!(" · {m}"))
            .unwrap_or_default()
    ));
    let mut body = String::new();
    // Sanitized before splitting, so a `\r` is shown (as `\x0d`) rather than eaten by `lines`.
    for line in tierscope_engine::text::sanitize_for_terminal(&c.text).lines() {
        body.push_str(mark);
        body.push_str("  ");
        body.push_str(line);
        body.push('\n');
    }
    out.verbatim(body);
}

/// The context as text.
pub fn text(ctx: &RenderedContext, diff_prev: bool) -> Text {
    let mut out = Text::new();
    out.line(format!(
        "request {} · {} tokens · {} chunks",
        ctx.request,
        ctx.tokens,
        ctx.chunks.len()
    ));
    if let Some(note) = &ctx.note {
        out.line(format!("({note})"));
    }
    for (i, c) in ctx.chunks.iter().enumerate() {
        if diff_prev && ctx.divergence_index == Some(i) {
            out.line(format!(
                ">>>>>> divergence against request {}: common prefix {} tokens; {} chunks there before:",
                ctx.prev_request.map_or("-".into(), |p| p.to_string()),
                ctx.divergence,
                ctx.replaced.len()
            ));
            for r in &ctx.replaced {
                write_chunk(&mut out, r, "- ");
            }
            out.line(">>>>>> now:");
        }
        let mark = if diff_prev && c.changed_since_prev {
            "+ "
        } else {
            ""
        };
        write_chunk(&mut out, c, mark);
    }
    if diff_prev && ctx.divergence_index == Some(ctx.chunks.len()) {
        out.line(format!(
            ">>>>>> identical to request {} ({} tokens)",
            ctx.prev_request.map_or("-".into(), |p| p.to_string()),
            ctx.divergence
        ));
    }
    out
}

/// The output of `render`: the rendered context (JSON) or its text.
pub struct RenderReport<'a> {
    pub context: &'a RenderedContext,
    pub diff_prev: bool,
}

impl report::Report for RenderReport<'_> {
    fn name(&self) -> &'static str {
        "render"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.context
    }
    fn text(&self) -> Text {
        text(self.context, self.diff_prev)
    }
}

pub fn run(a: &RenderArgs) -> anyhow::Result<()> {
    let policy = a.policy.resolve()?;
    let summaries = a
        .summaries
        .open(&super::outputs::guard(&a.load, &[&a.policy.policy]))?;
    let session =
        tierscope_engine::session::load(&a.load.options()).context("loading the session")?;
    let book = summaries
        .as_ref()
        .map(|sm| super::flat_summaries::book_for(sm, &session, &policy, a.policy.budget))
        .transpose()?
        .flatten();
    let input = Input {
        summaries: book.as_ref(),
        ..Input::from(&session)
    };
    let ctx = replay::render_at(&input, &policy, a.policy.budget, a.at)?;
    report::emit(
        Format::json_if(a.json),
        &RenderReport {
            context: &ctx,
            diff_prev: a.diff_prev,
        },
    )
}
