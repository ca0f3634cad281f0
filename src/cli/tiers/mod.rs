//! `tierscope tiers generate`: a model writes each episode's dense, compact and anchor tiers
//! once, through any OpenAI-compatible `/v1/chat/completions` endpoint; the tiers land in a
//! `*.tiers.json` sidecar with their lineage and cost, and `--tiers external` (or `audit` /
//! `experiment --tiers-dir DIR`) loads them like any other tiers.
//!
//! The engine does the work (`tierscope_engine::historian`); this file reads the flags,
//! finds the key, keeps the output out of OpenCode's data dir, drives the display and prints the
//! summary. The key is read from the environment, sent in the `Authorization` header, and never
//! printed, written or put into an error message.

pub(super) mod http;
mod progress;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde::Serialize;

use super::report::{self, plural, Cell, Format, Table, Text};
use super::LoadArgs;
use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::sidecar::{ExternalEpisode, SidecarLocator};
use tierscope_engine::historian::cache::{CacheKey, HistorianCache, Lookup};
use tierscope_engine::historian::cost::{dollars, finite_dollars, table_price, GenerationPrice};
use tierscope_engine::historian::input::{episode_inputs, EpisodeInput};
use tierscope_engine::historian::prompt::{steps, PROMPT_VERSION};
use tierscope_engine::historian::retry::RetryPolicy;
use tierscope_engine::historian::run::{
    generate, GenerateOptions, Outcome, RunReport, ThreadSleeper, UsageTotals,
};
use tierscope_engine::historian::transport::{completions_url, display_url};
use tierscope_engine::historian::write::{
    existing, external_episode, sidecar_path, tiers_file, write_tiers_file, Existing,
};
use tierscope_engine::historian::HistorianStrategy;
use tierscope_engine::research::report::{thousands, thousands_u64};

#[derive(Debug, Args)]
pub struct TiersArgs {
    #[command(subcommand)]
    pub command: TiersCommand,
}

#[derive(Debug, Subcommand)]
pub enum TiersCommand {
    /// Have a model write each episode's dense, compact and anchor tiers once (OpenAI-compatible
    /// endpoint), into a `*.tiers.json` sidecar with lineage and cost.
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
// The historian always reads the full text; `--tiers` (a loading flag) does not apply here.
#[command(mut_arg("tiers", |a| a.hide(true)))]
pub struct GenerateArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// The OpenAI-compatible API: a base URL (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`, `http://127.0.0.1:8080`) or the full `…/chat/completions` URL.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// The model name the endpoint knows (e.g. gpt-4.1-mini, a vLLM served model, llama3.1:8b).
    #[arg(long, value_name = "NAME")]
    pub model: String,
    /// source: one call per episode, every tier from the full text; cascade: three calls, each
    /// tier from the one above.
    #[arg(long, value_name = "STRATEGY", default_value = "source")]
    pub strategy: HistorianStrategy,
    /// Where the sidecar goes: DIR/<session id>.tiers.json (default: $XDG_DATA_HOME/tierscope,
    /// where every command finds it with --tiers external).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Episodes generated at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// The environment variable holding the API key (unset OPENAI_API_KEY: no key is sent,
    /// as local servers expect). The key is never printed or stored.
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Only these episodes (repeatable: --episode E3 --episode E7).
    #[arg(long = "episode", value_name = "ID")]
    pub only: Vec<String>,
    /// The generate-once cache (default: $TIERSCOPE_CACHE_DIR/historian, else the XDG cache dir).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Ask again even where the cache has an answer (the new answers replace the cached ones).
    #[arg(long)]
    pub refresh: bool,
    /// Never send response_format json_object (some servers reject it; it is also dropped
    /// automatically when refused).
    #[arg(long)]
    pub no_json_mode: bool,
    /// Sampling temperature (default: not sent, the model's own).
    #[arg(long, value_name = "T")]
    pub temperature: Option<f64>,
    /// max_tokens for each answer (default: not sent).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Seconds to wait for one answer.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub timeout: u64,
    /// Attempts after the first on 429, 5xx and timeouts.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_retries: u32,
    /// The first retry's backoff in milliseconds (doubling, with jitter, capped at 60 s).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub retry_base_ms: u64,
    /// Dollars per million input and output tokens, e.g. 0.4,1.6 (default: the pricing table's,
    /// when it has the model).
    #[arg(long, value_name = "IN,OUT", value_parser = price_value)]
    pub price: Option<(f64, f64)>,
    /// Replace a tiers sidecar that tierscope's historian did not write.
    #[arg(long)]
    pub force: bool,
    /// Send nothing: list the episodes, what the cache has, and the input tokens a run would send.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &TiersArgs) -> anyhow::Result<()> {
    match &a.command {
        TiersCommand::Generate(g) => run_generate(g),
    }
}

pub(super) fn price_value(s: &str) -> Result<(f64, f64), String> {
    let (i, o) = s
        .split_once(',')
        .ok_or_else(|| "expected IN,OUT (dollars per million tokens), e.g. 0.4,1.6".to_owned())?;
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{x:?} is not a price"))
    };
    Ok((num(i)?, num(o)?))
}

fn run_generate(a: &GenerateArgs) -> anyhow::Result<()> {
    if a.load.tiers != TierSource::Source {
        bail!(
            "--tiers {} does not apply: the historian reads each episode's full text (use \
             --strategy source|cascade to choose how it writes)",
            a.load.tiers.as_str()
        );
    }
    let url = completions_url(&a.endpoint);
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!(
            "--endpoint {:?}: expected an http:// or https:// URL",
            display_url(&a.endpoint)
        );
    }
    let key = api_key(&a.api_key_env, "--api-key-env")?;
    // Where the sidecar and the cache go, checked before the load so a refusal comes at once.
    let mut guard = super::outputs::guard(&a.load, &[]);
    let out_dir = match &a.out {
        Some(d) => d.clone(),
        None => SidecarLocator::default_data_dir()
            .context("no data dir for the sidecar on this system; pass --out DIR")?,
    };
    guard.check(&out_dir).context("--out")?;
    let cache_dir = match &a.cache_dir {
        Some(d) => Some(d.clone()),
        None => HistorianCache::default_dir(),
    };
    if let Some(d) = &cache_dir {
        guard.check(d).context("the historian cache")?;
    }
    let session =
        tierscope_engine::session::load(&a.load.options()).context("loading the session")?;
    for w in &session.warnings {
        report::stderr::warn(w);
    }
    let all = episode_inputs(&session);
    // Message ranges of this segmentation: an earlier entry for any other range is stale.
    let ranges: std::collections::BTreeSet<(String, String)> = all
        .iter()
        .map(|e| (e.first_message_id.clone(), e.last_message_id.clone()))
        .collect();
    let inputs = selected(all, &a.only)?;
    let session_id = session.trace.session.id.clone();

    // And what the load read, except this session's tiers sidecar, which the historian
    // rewrites (merging what it holds).
    guard.loaded_except(&session, &["tiers"]);
    guard
        .check(&sidecar_path(&out_dir, &session_id)?)
        .context("--out")?;
    let cache = cache_dir.as_ref().map(HistorianCache::new);
    let price = match a.price {
        Some((input, output)) => Some(GenerationPrice {
            priced_as: "--price".to_owned(),
            input,
            output,
            cached_multiplier: 1.0,
        }),
        None => table_price(&a.model),
    };

    if a.dry_run {
        return dry_run(a, &inputs, cache.as_ref(), price.as_ref(), &url);
    }
    if key.is_some() && url.starts_with("http://") && !is_local(&url) {
        report::stderr::warn(&format!(
            "sending the API key over plain HTTP to {}",
            display_url(&url)
        ));
    }

    let path = sidecar_path(&out_dir, &session_id)?;
    let kept = match existing(&path, &a.model, PROMPT_VERSION, a.strategy)? {
        Existing::Nothing => Vec::new(),
        Existing::Same(eps) => eps
            .into_iter()
            .filter(|e| ranges.contains(&(e.first_message_id.clone(), e.last_message_id.clone())))
            .collect(),
        Existing::OtherRun(what) => {
            report::stderr::note(&format!(
                "replacing {} (tiers by {what}); to keep both, pass --out another dir",
                path.display()
            ));
            Vec::new()
        }
        Existing::Foreign(why) if !a.force => bail!(
            "{} exists and was not written by tierscope's historian ({why}); pass --force to \
             replace it, or --out another dir",
            path.display()
        ),
        Existing::Foreign(_) => Vec::new(),
    };

    let transport = http::HttpTransport::new(&url, key, Duration::from_secs(a.timeout.max(1)));
    let mut opts = GenerateOptions::new(&a.model, a.strategy);
    opts.concurrency = usize::from(a.concurrency);
    opts.json_mode = !a.no_json_mode;
    opts.refresh = a.refresh;
    opts.params.temperature = a.temperature;
    opts.params.max_tokens = a.max_tokens;
    opts.retry = RetryPolicy {
        max_retries: a.max_retries,
        base: Duration::from_millis(a.retry_base_ms),
        ..RetryPolicy::default()
    };

    let order = |id: &str| session.trace.message_index(id);
    let display = progress::Display::new(inputs.len());
    let mut written: Vec<(usize, ExternalEpisode)> = Vec::new();
    let mut write_error: Option<anyhow::Error> = None;
    let report = generate(
        &inputs,
        &opts,
        &transport,
        cache.as_ref(),
        &ThreadSleeper,
        &display,
        &mut |o: &Outcome| {
            display.finished(o);
            if let Outcome::Done(r) = o {
                written.push((
                    r.input.index,
                    external_episode(r, &a.model, PROMPT_VERSION, a.strategy, price.as_ref()),
                ));
                let eps: Vec<ExternalEpisode> = written.iter().map(|(_, e)| e.clone()).collect();
                let file = tiers_file(&session_id, &kept, &eps, &order);
                if let Err(e) = write_tiers_file(&path, &file, &guard) {
                    write_error.get_or_insert(e.into());
                }
            }
        },
    );
    display.close();
    let sidecar_episodes = {
        let eps: Vec<ExternalEpisode> = written.iter().map(|(_, e)| e.clone()).collect();
        tiers_file(&session_id, &kept, &eps, &order).episodes.len()
    };
    let priced = |u: &UsageTotals| price.as_ref().map(|p| finite_dollars(dollars(p, u)));
    let summary = Summary {
        session: session_id.clone(),
        endpoint: display_url(&url),
        sidecar: (!written.is_empty() || !kept.is_empty()).then(|| path.clone()),
        sidecar_episodes,
        cache_dir: cache_dir.clone(),
        this_run_dollars: priced(&report.this_run).and_then(Result::ok),
        all_tiers_dollars: priced(&report.all_tiers).and_then(Result::ok),
        cost_error: [report.this_run, report.all_tiers]
            .iter()
            .find_map(|u| priced(u).and_then(Result::err)),
        price: price.clone(),
        report,
    };
    report::emit(
        Format::json_if(a.json),
        &SummaryReport {
            summary: &summary,
            args: a,
            out_dir: &out_dir,
        },
    )?;
    if let Some(e) = write_error {
        return Err(e);
    }
    let r = &summary.report;
    if let Some(why) = &r.aborted {
        bail!("the run stopped: {why}");
    }
    if !r.failed.is_empty() {
        bail!(
            "{} of {} episodes got no tiers (listed above); run the same command again to retry only them",
            r.failed.len(),
            r.episodes
        );
    }
    Ok(())
}

/// The API key from `var`. The default variable may be unset (local servers need no key); a
/// variable named with `flag` (`--api-key-env`) must be set.
pub(super) fn api_key(var: &str, flag: &str) -> anyhow::Result<Option<String>> {
    match std::env::var(var) {
        Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_owned())),
        _ if var != "OPENAI_API_KEY" => bail!("{flag} {var}: the variable is not set"),
        _ => {
            report::stderr::note(
                "OPENAI_API_KEY is not set; sending no Authorization header (fine for a local server)",
            );
            Ok(None)
        }
    }
}

/// The episodes named with --episode (all without it); an unknown id is an error.
fn selected(all: Vec<EpisodeInput>, only: &[String]) -> anyhow::Result<Vec<EpisodeInput>> {
    if only.is_empty() {
        return Ok(all);
    }
    for id in only {
        if !all.iter().any(|e| e.episode_id.eq_ignore_ascii_case(id)) {
            bail!(
                "--episode {id}: no such episode (the session has E0..E{})",
                all.len().saturating_sub(1)
            );
        }
    }
    Ok(all
        .into_iter()
        .filter(|e| only.iter().any(|id| e.episode_id.eq_ignore_ascii_case(id)))
        .collect())
}

pub(super) fn is_local(url: &str) -> bool {
    let host = display_url(url);
    let host = host.split("://").nth(1).unwrap_or(&host);
    ["localhost", "127.", "[::1]"]
        .iter()
        .any(|h| host.starts_with(h))
}

#[derive(Serialize)]
struct Summary {
    session: String,
    endpoint: String,
    sidecar: Option<PathBuf>,
    sidecar_episodes: usize,
    cache_dir: Option<PathBuf>,
    price: Option<GenerationPrice>,
    this_run_dollars: Option<f64>,
    all_tiers_dollars: Option<f64>,
    /// Why a priced run has no dollars (null above): they are not a finite amount.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_error: Option<String>,
    report: RunReport,
}

pub(super) fn tokens_line(
    u: &UsageTotals,
    dollars: Option<f64>,
    cost_error: Option<&str>,
) -> String {
    let mut s = format!(
        "{}, {} tokens in, {} out",
        plural(usize::try_from(u.calls).unwrap_or(usize::MAX), "call"),
        thousands_u64(u.input_tokens),
        thousands_u64(u.output_tokens)
    );
    if u.cached_input_tokens > 0 {
        s.push_str(&format!(
            " ({} in cached)",
            thousands_u64(u.cached_input_tokens)
        ));
    }
    if u.saturated {
        s.push_str(" (at least: a server reported usage too large to add up)");
    }
    match (dollars, cost_error) {
        (Some(d), _) => s.push_str(&format!(", ${d:.4}")),
        (None, Some(why)) => s.push_str(&format!("; {why}")),
        (None, None) => {}
    }
    if u.calls_without_usage > 0 {
        s.push_str(&format!(
            "; {} reported no usage (not counted)",
            plural(
                usize::try_from(u.calls_without_usage).unwrap_or(usize::MAX),
                "call"
            )
        ));
    }
    s
}

/// At what prices the calls of `model` were billed, or that they were not (`flag` prices them).
pub(super) fn price_line(price: Option<&GenerationPrice>, model: &str, flag: &str) -> String {
    match price {
        Some(p) => format!(
            "priced as {}: ${}/${} per M tokens in/out",
            p.priced_as, p.input, p.output
        ),
        None => {
            format!(
                "not priced: model {model} is not in the pricing table ({flag} IN,OUT prices it)"
            )
        }
    }
}

/// The output of `tiers generate`: the summary (JSON) or what the run did, cost and wrote, and
/// the command that compares its tiers (text).
struct SummaryReport<'a> {
    summary: &'a Summary,
    args: &'a GenerateArgs,
    out_dir: &'a Path,
}

impl report::Report for SummaryReport<'_> {
    fn name(&self) -> &'static str {
        "tiers generate"
    }
    fn document(&self) -> impl Serialize + '_ {
        self.summary
    }
    fn text(&self) -> Text {
        summary_text(self.summary, self.args, self.out_dir)
    }
}

fn summary_text(s: &Summary, a: &GenerateArgs, out_dir: &Path) -> Text {
    let r = &s.report;
    let mut out = Text::new();
    out.line(format!(
        "historian {} at {}, strategy {}, prompt {}",
        r.model, s.endpoint, r.strategy, r.prompt_version
    ));
    out.line(format!(
        "session {}: {} — {} generated, {} from the cache, {} failed{}",
        s.session,
        plural(r.episodes, "episode"),
        r.generated,
        r.from_cache,
        r.failed.len(),
        if r.skipped > 0 {
            format!(", {} left undone when the run stopped", r.skipped)
        } else {
            String::new()
        }
    ));
    out.line(format!(
        "requests: {} ({}){}",
        r.requests,
        if r.retries == 1 {
            "1 retry".to_owned()
        } else {
            format!("{} retries", r.retries)
        },
        if r.json_mode_dropped {
            "; the endpoint refused JSON mode, answers parsed strictly without it"
        } else {
            ""
        }
    ));
    out.line(format!(
        "this run:  {}",
        tokens_line(&r.this_run, s.this_run_dollars, s.cost_error.as_deref())
    ));
    out.line(format!(
        "the tiers: {}",
        tokens_line(&r.all_tiers, s.all_tiers_dollars, s.cost_error.as_deref())
    ));
    out.line(price_line(s.price.as_ref(), &r.model, "--price"));
    match &s.sidecar {
        Some(p) => {
            out.line(format!(
                "sidecar: {} ({})",
                p.display(),
                plural(s.sidecar_episodes, "episode")
            ));
            let mut cmd = String::from("tierscope audit");
            if let Some(p) = &a.load.path {
                cmd.push_str(&format!(" {}", p.display()));
            }
            cmd.push_str(&format!(" --session {}", s.session));
            // The same episodes: sidecar entries are matched by their message range.
            if a.load.episodes != Default::default() {
                cmd.push_str(&format!(" --episodes {}", a.load.episodes.as_str()));
            }
            if let Some(n) = a.load.max_requests {
                cmd.push_str(&format!(" --max-requests {n}"));
            }
            cmd.push_str(&format!(" --tiers-dir {}", out_dir.display()));
            out.line(format!("compare: {cmd}"));
        }
        None => {
            out.line("sidecar: not written (no episode got tiers)");
        }
    }
    out
}

fn dry_run(
    a: &GenerateArgs,
    inputs: &[EpisodeInput],
    cache: Option<&HistorianCache>,
    price: Option<&GenerationPrice>,
    url: &str,
) -> anyhow::Result<()> {
    let mut episodes = Vec::new();
    for e in inputs {
        let hash = e.content_hash();
        let cached = steps(a.strategy)
            .iter()
            .filter(|s| {
                !a.refresh
                    && cache.is_some_and(|c| {
                        let k =
                            CacheKey::new(&hash, a.strategy, &a.model, PROMPT_VERSION, &s.name());
                        matches!(c.get(&k), Lookup::Hit(_))
                    })
            })
            .count();
        let steps = steps(a.strategy).len();
        episodes.push(DryRunEpisode {
            episode: e.episode_id.clone(),
            full_tokens: e.source_tokens,
            cached_calls: cached,
            steps,
            calls: steps - cached,
        });
    }
    let calls = episodes.iter().map(|e| e.calls).sum();
    // The first call reads the full text; cascade's later calls read a model's tier (unknown).
    let input_tokens = episodes
        .iter()
        .filter(|e| e.cached_calls == 0)
        .map(|e| u64::from(e.full_tokens))
        .sum::<u64>();
    let plan = DryRun {
        model: a.model.clone(),
        endpoint: display_url(url),
        strategy: a.strategy.to_string(),
        prompt_version: PROMPT_VERSION,
        episodes,
        calls,
        input_tokens,
        input_dollars: price.map(|p| input_tokens as f64 * p.input / 1e6),
        priced_as: price.map(|p| p.priced_as.clone()),
    };
    report::emit(Format::json_if(a.json), &plan)
}

/// `tiers generate --dry-run`: what a run would send, episode by episode.
#[derive(Serialize)]
struct DryRun {
    model: String,
    endpoint: String,
    strategy: String,
    prompt_version: &'static str,
    episodes: Vec<DryRunEpisode>,
    /// Calls a run would send (those the cache cannot answer).
    calls: usize,
    /// Tokens of episode text those calls read (the prompt's own tokens not included).
    input_tokens: u64,
    /// What that input costs at `priced_as` prices (output not included).
    input_dollars: Option<f64>,
    priced_as: Option<String>,
}

#[derive(Serialize)]
struct DryRunEpisode {
    episode: String,
    full_tokens: u32,
    /// Calls the cache answers, of `steps`.
    cached_calls: usize,
    steps: usize,
    calls: usize,
}

impl report::Report for DryRun {
    fn name(&self) -> &'static str {
        "tiers generate --dry-run"
    }
    fn document(&self) -> impl Serialize + '_ {
        self
    }
    fn text(&self) -> Text {
        let mut out = Text::new();
        out.line(format!(
            "dry run: {} at {}, strategy {}, prompt {}; nothing is sent",
            self.model, self.endpoint, self.strategy, self.prompt_version
        ));
        let mut t = Table::aligned(&["episode", "full_tokens", "cached", "calls"]);
        for e in &self.episodes {
            t.push(vec![
                Cell::text(e.episode.clone()),
                Cell::Tokens(i64::from(e.full_tokens)),
                Cell::text(format!("{}/{}", e.cached_calls, e.steps)),
                Cell::Int(e.calls as u64),
            ]);
        }
        out.table(t);
        let estimate = match (self.input_dollars, &self.priced_as) {
            (Some(d), Some(p)) => {
                format!(" ≈ ${d:.4} of input at {p} prices (output not included)")
            }
            _ => String::new(),
        };
        out.line(format!(
            "{} calls would be sent, reading {} tokens of episode text plus the prompt{estimate}",
            self.calls,
            thousands(self.input_tokens as i64)
        ));
        out
    }
}
