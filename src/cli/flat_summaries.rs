//! `--summary-endpoint URL --summary-model NAME` (on `experiment`, `replay` and `render`): a model
//! writes the summaries of the flat baseline's simulated compactions with the agent's own
//! compaction prompt (issue 32, item 8), once: cached, billed, with lineage, as `tiers generate`
//! writes tiers. Without the flags a simulated summary is a stand-in (an upper bound on what a
//! written one keeps) and nothing here runs.
//!
//! The engine does the work (`tierscope_engine::research::flat_summaries`); this file reads the
//! flags, the key (from the environment, sent in the `Authorization` header, never printed) and
//! the prompt file, and prints the bill.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::report::{self, Text};
use super::tiers::{api_key, http::HttpTransport, is_local, price_line, price_value, tokens_line};
use tierscope_engine::historian::cache::HistorianCache;
use tierscope_engine::historian::cost::{table_price, GenerationPrice};
use tierscope_engine::historian::run::{Events, GenerateOptions, ThreadSleeper};
use tierscope_engine::historian::summary::SummaryWriter;
use tierscope_engine::historian::transport::{completions_url, display_url};
use tierscope_engine::historian::HistorianStrategy;
use tierscope_engine::output_guard::OutputGuard;
use tierscope_engine::policy::Policy;
use tierscope_engine::replay::written::SummaryBook;
use tierscope_engine::research::flat_summaries::{
    complete_book, report, FlatSummaryReport, SummarySource,
};
use tierscope_engine::session::LoadedSession;
use tierscope_engine::trace::summary_call::{CompactionPrompt, HISTORY};

/// The largest prompt file read.
const MAX_PROMPT_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, Args)]
pub struct SummaryArgs {
    /// Have a model write the summaries of the flat baseline's simulated compactions, asked with
    /// the agent's own compaction prompt, through this OpenAI-compatible API (as `tiers
    /// generate --endpoint`): written once, cached, billed, with lineage. Without it a simulated
    /// summary is a stand-in: the compact tiers of what it covers (an upper bound).
    #[arg(long, value_name = "URL", requires = "summary_model")]
    pub summary_endpoint: Option<String>,
    /// The model that writes them (as `tiers generate --model`).
    #[arg(long, value_name = "NAME", requires = "summary_endpoint")]
    pub summary_model: Option<String>,
    /// The environment variable holding the endpoint's API key (unset OPENAI_API_KEY: no key is
    /// sent, as local servers expect). The key is never printed or stored.
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub summary_api_key_env: String,
    /// Ask with this compaction prompt instead of the session agent's own (needed for Claude
    /// Code, whose prompt is not bundled): the file's text, with `{{history}}` where the
    /// conversation goes (without it, the conversation comes first).
    #[arg(long, value_name = "FILE")]
    pub summary_prompt: Option<PathBuf>,
    /// The generate-once cache (default: $TIERSCOPE_CACHE_DIR/flat-summaries, else the XDG cache
    /// dir).
    #[arg(long, value_name = "DIR")]
    pub summary_cache_dir: Option<PathBuf>,
    /// Ask again even where the cache has a summary (the new one replaces it).
    #[arg(long)]
    pub summary_refresh: bool,
    /// Dollars per million input and output tokens, e.g. 0.4,1.6 (default: the pricing
    /// table's, when it has the model).
    #[arg(long, value_name = "IN,OUT", value_parser = price_value)]
    pub summary_price: Option<(f64, f64)>,
    /// max_tokens for each summary (default: not sent).
    #[arg(long, value_name = "N")]
    pub summary_max_tokens: Option<u32>,
    /// Seconds to wait for one summary.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub summary_timeout: u64,
}

/// What the summaries of one command are written with.
pub struct Summaries {
    transport: HttpTransport,
    opts: GenerateOptions,
    cache: Option<HistorianCache>,
    endpoint: String,
    created: String,
    /// A prompt from `--summary-prompt`.
    pub prompt: Option<CompactionPrompt>,
    pub price: Option<GenerationPrice>,
}

impl SummaryArgs {
    /// What the flags configure (`None` without `--summary-endpoint`); the cache dir is checked
    /// against `guard` (it must not be an input).
    pub fn open(&self, guard: &OutputGuard) -> anyhow::Result<Option<Summaries>> {
        let (Some(endpoint), Some(model)) = (&self.summary_endpoint, &self.summary_model) else {
            return Ok(None);
        };
        let url = completions_url(endpoint);
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            anyhow::bail!(
                "--summary-endpoint {:?}: expected an http:// or https:// URL",
                display_url(endpoint)
            );
        }
        let key = api_key(&self.summary_api_key_env, "--summary-api-key-env")?;
        if key.is_some() && url.starts_with("http://") && !is_local(&url) {
            report::stderr::warn(&format!(
                "sending the API key over plain HTTP to {}",
                display_url(&url)
            ));
        }
        let cache_dir = match &self.summary_cache_dir {
            Some(d) => Some(d.clone()),
            None => tierscope_engine::tokens::default_cache_dir().map(|d| d.join("flat-summaries")),
        };
        if let Some(d) = &cache_dir {
            guard.check(d).context("the flat summaries' cache")?;
        }
        let prompt = self.summary_prompt.as_ref().map(prompt_file).transpose()?;
        let mut opts = GenerateOptions::new(model, HistorianStrategy::Source);
        opts.json_mode = false;
        opts.refresh = self.summary_refresh;
        opts.params.max_tokens = self.summary_max_tokens;
        let price = match self.summary_price {
            Some((input, output)) => Some(GenerationPrice {
                priced_as: "--summary-price".to_owned(),
                input,
                output,
                cached_multiplier: 1.0,
            }),
            None => table_price(model),
        };
        Ok(Some(Summaries {
            transport: HttpTransport::new(
                &url,
                key,
                Duration::from_secs(self.summary_timeout.max(1)),
            ),
            opts,
            cache: cache_dir.map(HistorianCache::new),
            endpoint: display_url(&url),
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            prompt,
            price,
        }))
    }
}

impl Summaries {
    /// The writer every replay of the command shares.
    pub fn writer(&self) -> SummaryWriter<'_> {
        SummaryWriter::new(
            &self.opts,
            &self.transport,
            self.cache.as_ref(),
            &ThreadSleeper,
            &Notes,
            &self.endpoint,
            &self.created,
        )
    }
}

/// The summaries `policy` shows at `budget` on `session`, each written by `sm`'s model (none
/// for a policy that is not flat or does not simulate), with what they cost on stderr.
pub fn book_for(
    sm: &Summaries,
    session: &LoadedSession,
    policy: &Policy,
    budget: Option<u64>,
) -> anyhow::Result<Option<SummaryBook>> {
    let writer = sm.writer();
    let src = SummarySource {
        writer: &writer,
        prompt: sm.prompt.clone(),
    };
    let done = complete_book(session, policy, budget, &src);
    let bill = report(&src, session, sm.price.clone());
    if bill.bill.summaries > 0 || bill.bill.failed > 0 {
        report_to_stderr(&bill);
    }
    done.map_err(|e| anyhow::Error::new(e).context(RESUME))
}

/// The context of an error while writing summaries.
pub const RESUME: &str =
    "writing the flat baseline's summaries (those written are cached: run again to resume)";

/// `--summary-prompt FILE` as a prompt: the file's text, the history where it says
/// `{{history}}`, else before it.
fn prompt_file(path: &PathBuf) -> anyhow::Result<CompactionPrompt> {
    let at = || format!("--summary-prompt {}", path.display());
    let meta = std::fs::metadata(path).with_context(at)?;
    if !meta.is_file() || meta.len() > MAX_PROMPT_BYTES {
        anyhow::bail!(
            "{}: expected a text file of at most {MAX_PROMPT_BYTES} bytes",
            at()
        );
    }
    let text = std::fs::read_to_string(path).with_context(at)?;
    if text.trim().is_empty() {
        anyhow::bail!("--summary-prompt {}: the file is empty", path.display());
    }
    let first = if text.contains(HISTORY) {
        text
    } else {
        format!("{HISTORY}\n\n{text}")
    };
    Ok(CompactionPrompt {
        system: None,
        first,
        update: None,
        provenance: format!("the file {} (--summary-prompt)", path.display()),
    })
}

/// Retries and notes on stderr.
struct Notes;

impl Events for Notes {
    fn retrying(&self, label: &str, why: &str, wait: Duration) {
        report::stderr::line(&format!(
            "{label}: {why}; retrying in {:.1}s",
            wait.as_secs_f64()
        ));
    }
    fn note(&self, message: &str) {
        report::stderr::note(message);
    }
}

/// The report as text: who wrote the summaries with what prompt, and what they cost.
pub fn report_text(r: &FlatSummaryReport) -> Text {
    let mut out = Text::new();
    let b = &r.bill;
    out.line(format!(
        "flat summaries written by {} at {}, prompt: {}",
        r.model,
        r.endpoint,
        match (&r.prompt, &r.prompt_hash) {
            (Some(p), Some(h)) => format!("{p} (xxh3 {h})"),
            _ => "none (the session's agent has none bundled, and no summary was needed)".into(),
        }
    ));
    out.line(format!(
        "  {} summaries: {} written now, {} from the cache, {} failed; {} requests ({} retries)",
        b.summaries, b.written_now, b.from_cache, b.failed, b.requests, b.retries
    ));
    out.line(format!(
        "  this run:      {}",
        tokens_line(&b.this_run, r.this_run_dollars, r.cost_error.as_deref())
    ));
    out.line(format!(
        "  the summaries: {}",
        tokens_line(
            &b.all_summaries,
            r.all_summaries_dollars,
            r.cost_error.as_deref()
        )
    ));
    out.line(format!(
        "  {}",
        price_line(r.price.as_ref(), &r.model, "--summary-price")
    ));
    out
}

/// The report on stderr (for commands whose stdout is the replay itself).
pub fn report_to_stderr(r: &FlatSummaryReport) {
    for line in report_text(r).render().lines() {
        report::stderr::note(line.trim_start());
    }
}
