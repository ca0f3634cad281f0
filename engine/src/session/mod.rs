//! The one call every command uses to load a session with its episodes, tiers and probes:
//! [`load`] (from the command-line loading flags) or [`from_trace`] (tests, generated traces).
//!
//! Everything is computed here, once: segmentation, classification, every tier's text and token
//! count (in one parallel, cached batch). Nothing downstream tokenizes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::episode::classify;
use crate::episode::options::TierSource;
use crate::episode::record::EpisodeRecord;
use crate::episode::rules::{Rules, RulesError};
use crate::episode::segment::{self, Segmentation};
use crate::episode::sidecar::{Probe, SidecarError, SidecarKind, SidecarLocator, Sidecars};
use crate::episode::tiers;
use crate::episode::{Episode, EpisodeKind, Representation, Strategy};
use crate::formats::magic_context::{self, MagicContextError};
use crate::tokens::{TokenStats, Tokenizer};
use crate::trace::load::Source;
use crate::trace::summary_call::CompactionSizes;
use crate::trace::{LoadError, Trace, UserKind};

pub mod calibration;
mod draft;
mod options;
pub mod progress;
mod stored_system;
mod summary_heads;
use draft::{draft_episode, DraftInputs, Drafted, Pending};
pub use options::EpisodeOptions;

/// Everything that can stop a load.
#[derive(Debug, thiserror::Error)]
pub enum LoadSessionError {
    #[error(transparent)]
    Trace(#[from] LoadError),
    #[error(transparent)]
    Rules(#[from] RulesError),
    #[error(transparent)]
    Sidecar(#[from] SidecarError),
    #[error(transparent)]
    MagicContext(#[from] MagicContextError),
    #[error("--follow does not follow Magic Context compartments; drop --episodes magic-context / --magic-context")]
    FollowMagicContext,
    #[error("no OpenCode data found to follow; pass a path")]
    NothingToFollow,
    #[error("--episodes magic-context: no Magic Context database (pass --magic-context FILE; looked for {0})")]
    NoMagicContext(String),
}

/// A session ready for every command: its trace, episodes with tiers, probes and milestones.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub trace: Trace,
    pub episodes: Vec<Episode>,
    /// The canonical record of each episode (same order as `episodes`) when the load kept them
    /// (`LoadOptions::records`, or `--tiers record`, which renders its views from them); else
    /// empty.
    pub records: Vec<EpisodeRecord>,
    pub probes: Vec<Probe>,
    /// Request indices where a todo changed status (the request whose message holds the
    /// `todowrite`) or a compaction happened (the summary request).
    pub milestones: BTreeSet<usize>,
    /// Tokenizer label, e.g. `o200k_base@bpe-openai-0.3`.
    pub tokenizer: String,
    /// Sub-agent sessions, each loaded the same way (their own episodes and numbering).
    pub children: Vec<LoadedSession>,
    /// Segmentation and tier strategy used.
    pub segmentation: Segmentation,
    pub tier_source: TierSource,
    /// Where the rules came from ("embedded" or a path).
    pub rules_origin: String,
    /// Sidecars found: (kind, path).
    pub sidecar_paths: Vec<(String, PathBuf)>,
    /// Token counting of this load (the children's included).
    pub token_stats: TokenStats,
    /// Non-fatal problems (an unloadable child, an unmatched external tier, a missing pin).
    pub warnings: Vec<String>,
    /// The Magic Context compartments behind the episodes, when they come from a `context.db`
    /// (what the `decay` policy reads to fold as Magic Context does).
    pub magic_context: Option<magic_context::MagicContextSession>,
    /// Lineage of the external tiers taken from a `*.tiers.json` sidecar (model, prompt,
    /// strategy, usage of the call that wrote each), for the audit and the experiment.
    pub tier_lineage: Vec<crate::episode::lineage::TierLineage>,
    /// The recorded compaction calls as the agent built them and its compaction prompt, with
    /// their token counts.
    pub compaction: CompactionSizes,
    /// How the token counts compare with the recorded usage, where the model's provider
    /// tokenizes otherwise (and whether they were scaled to it).
    pub calibration: Option<calibration::Calibration>,
    /// What replays of this session share (see [`crate::replay::PrepCache`]).
    pub prep_cache: crate::replay::PrepCache,
}

impl LoadedSession {
    /// The episode holding request `r`.
    pub fn episode_of_request(&self, r: usize) -> Option<&Episode> {
        let mi = self.trace.requests.get(r)?.message_index;
        self.episode_of_message(mi)
    }
    /// The episode holding message index `mi`.
    pub fn episode_of_message(&self, mi: usize) -> Option<&Episode> {
        let k = self.episodes.partition_point(|e| e.last_message < mi);
        self.episodes
            .get(k)
            .filter(|e| e.first_message <= mi && mi <= e.last_message)
    }
    pub fn episode(&self, id: &str) -> Option<&Episode> {
        self.episodes.iter().find(|e| e.id.eq_ignore_ascii_case(id))
    }
    /// The canonical record of an episode.
    pub fn record(&self, e: &Episode) -> Option<&EpisodeRecord> {
        self.records.get(e.index).filter(|r| r.episode_id == e.id)
    }
}

/// What to load and how: the engine's side of every command's loading flags (the CLI converts
/// its arguments into this; the explorer keeps one for reloads).
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// An opencode.db file, an OpenCode data dir, a storage dir or an export file (none: the
    /// OpenCode data dir, else the bundled sample session).
    pub path: Option<PathBuf>,
    /// Session id (none: the most recently updated main session).
    pub session: Option<String>,
    pub episodes: Segmentation,
    pub tiers: TierSource,
    pub tokenizer: crate::tokens::TokenizerKind,
    /// Classification rules (TOML) replacing the embedded defaults.
    pub rules: Option<PathBuf>,
    /// Directory to look in first for sidecars.
    pub sidecars: Option<PathBuf>,
    /// Split a long turn into episodes of at most N requests.
    pub max_requests: Option<usize>,
    /// Magic Context database.
    pub magic_context: Option<PathBuf>,
    /// Where the token cache lives (none: `$TIERSCOPE_CACHE_DIR`, else the platform cache dir).
    pub token_cache_dir: Option<PathBuf>,
    /// Keep each episode's canonical record in [`LoadedSession::records`] (`episodes --json`,
    /// `--records`). `--tiers record` keeps them regardless; other loads skip the work.
    pub records: bool,
    /// Counts only: drop each tier text once counted (`EpisodeOptions::drop_tier_texts`).
    pub drop_tier_texts: bool,
    /// Where the load reports how far it has got (the explorer's loading screen).
    pub progress: progress::ProgressSink,
}

impl LoadOptions {
    /// Open the source these options name (see [`crate::trace::load::open`]).
    pub fn open(&self) -> Result<Source, LoadError> {
        crate::trace::load::open(self.path.as_deref())
    }
}

/// Episode options from the loading options (rules read, sidecars not yet looked up).
pub fn options_from_args(args: &LoadOptions) -> Result<EpisodeOptions, LoadSessionError> {
    let rules = match &args.rules {
        Some(p) => Some(Rules::from_file(p)?),
        None => None,
    };
    Ok(EpisodeOptions {
        segmentation: args.episodes,
        tiers: args.tiers,
        tokenizer: args.tokenizer,
        rules,
        max_requests: args.max_requests,
        keep_records: args.records,
        drop_tier_texts: args.drop_tier_texts,
        progress: args.progress.clone(),
        ..EpisodeOptions::default()
    })
}

/// Load the session the flags name: open the source, load the trace and its children, then
/// [`Loader::build`]. The token cache on disk is used and updated (a failure to write it is a
/// warning).
pub fn load(args: &LoadOptions) -> Result<LoadedSession, LoadSessionError> {
    if args.rules.is_none() {
        // Compiled on another thread while the session is read, so the load does not wait for it.
        Rules::prepare_embedded();
    }
    use progress::LoadStage;
    let input_bytes = args
        .path
        .as_deref()
        .and_then(|p| std::fs::metadata(p).ok())
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len());
    args.progress.report(LoadStage::Reading, 0, input_bytes);
    let source = crate::trace::load::open(args.path.as_deref())?;
    // The source is given up with its session: nothing after needs it, and an export's store
    // would otherwise hold a second copy of the session for the whole load.
    let parts = source.into_session(args.session.as_deref(), true)?;
    args.progress
        .report(LoadStage::Reading, input_bytes, input_bytes);
    let (children, child_errors) = split_results(parts.children);
    Loader::new(args)?.finish(parts.trace, children, child_errors)
}

/// The children that loaded, and why the others did not.
fn split_results(
    results: Vec<Result<Trace, crate::trace::LoadError>>,
) -> (Vec<Trace>, Vec<String>) {
    let mut children = Vec::new();
    let mut child_errors = Vec::new();
    for child in results {
        match child {
            Ok(t) => children.push(t),
            Err(e) => child_errors.push(e.to_string()),
        }
    }
    (children, child_errors)
}

/// [`load`] for a source already open and its session's trace already read.
pub fn load_from(
    loader: &Loader,
    source: &Source,
    trace: Trace,
) -> Result<LoadedSession, LoadSessionError> {
    let children = source.load_children(&trace);
    build_with_children(loader, trace, children)
}

/// Build a loaded session from its trace and its children's results (an unloadable child is
/// reported, the others still load).
fn build_with_children(
    loader: &Loader,
    trace: Trace,
    results: Vec<Result<Trace, crate::trace::LoadError>>,
) -> Result<LoadedSession, LoadSessionError> {
    let (children, child_errors) = split_results(results);
    let mut loaded = loader.build(trace, children, child_errors)?;
    loader.save_into(&mut loaded);
    Ok(loaded)
}

/// Fit each session's counts to its recorded usage where the model tokenizes otherwise
/// ([`calibration`]).
fn calibrate_all(loaded: &mut LoadedSession) {
    for c in &mut loaded.children {
        c.calibration = calibration::calibrate(c);
    }
    loaded.calibration = calibration::calibrate(loaded);
}

/// The set-up every loading path shares (a fresh load and each `--follow` reload): the
/// options from the loading flags, where sidecars and Magic Context rows are found, and one
/// tokenizer whose cache is kept across [`Loader::build`]s, so unchanged text is counted once.
pub struct Loader {
    base: EpisodeOptions,
    locator: SidecarLocator,
    magic_context: Option<PathBuf>,
    tokenizer: Tokenizer,
}

impl Loader {
    /// Rules read; the tokenizer with the disk cache under the XDG cache dir.
    pub fn new(args: &LoadOptions) -> Result<Self, LoadSessionError> {
        Ok(Loader {
            base: options_from_args(args)?,
            locator: sidecar_locator(args),
            magic_context: args.magic_context.clone(),
            tokenizer: Tokenizer::with_disk_cache_for(
                args.tokenizer,
                args.token_cache_dir.as_deref(),
                &[args.path.as_deref(), args.magic_context.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>(),
            ),
        })
    }

    /// A session with its sub-agent sessions (`child_errors`: those that did not load, kept as
    /// warnings). `token_stats` are the tokenizer's so far; the disk cache is not written here
    /// (see [`Loader::save_into`]).
    pub fn build(
        &self,
        trace: Trace,
        children: Vec<Trace>,
        child_errors: Vec<String>,
    ) -> Result<LoadedSession, LoadSessionError> {
        let mut loaded = self.count(trace, children, child_errors)?;
        calibrate_all(&mut loaded);
        Ok(loaded)
    }

    /// [`Loader::build`] for a load that needs the tokenizer no more: the token cache is
    /// written and its map freed before the calibration replays the session (on a long
    /// session the map is tens of MB, and the replay is the load's peak).
    pub fn finish(
        self,
        trace: Trace,
        children: Vec<Trace>,
        child_errors: Vec<String>,
    ) -> Result<LoadedSession, LoadSessionError> {
        let mut loaded = self.count(trace, children, child_errors)?;
        self.save_into(&mut loaded);
        drop(self);
        calibrate_all(&mut loaded);
        Ok(loaded)
    }

    /// The session and its children drafted and counted, not yet calibrated.
    fn count(
        &self,
        trace: Trace,
        children: Vec<Trace>,
        child_errors: Vec<String>,
    ) -> Result<LoadedSession, LoadSessionError> {
        let child_locator = self.locator.for_child();
        let mut built = Vec::with_capacity(children.len());
        for t in children {
            let mut opts = self.options_for(&child_locator, &t)?;
            // Progress counts the session's own episodes.
            opts.progress = Default::default();
            built.push(from_trace_with(t, &opts, &self.tokenizer));
        }
        let opts = self.options_for(&self.locator, &trace)?;
        let mut loaded = from_trace_with(trace, &opts, &self.tokenizer);
        opts.progress.report(progress::LoadStage::Finishing, 0, 0);
        loaded.children = built;
        loaded.warnings.extend(
            child_errors
                .into_iter()
                .map(|e| format!("sub-agent session not loaded: {e}")),
        );
        loaded
            .warnings
            .extend(self.tokenizer.disk_refused().map(str::to_owned));
        loaded.token_stats = self.tokenizer.stats();
        Ok(loaded)
    }

    /// Write the token cache to disk (a failure is a warning of the load) and refresh its stats.
    pub fn save_into(&self, loaded: &mut LoadedSession) {
        if let Err(e) = self.tokenizer.save() {
            loaded.warnings.push(e.to_string());
        }
        loaded.token_stats = self.tokenizer.stats();
    }

    /// Sidecars and Magic Context rows of one session.
    fn options_for(
        &self,
        locator: &SidecarLocator,
        trace: &Trace,
    ) -> Result<EpisodeOptions, LoadSessionError> {
        options_for(&self.base, locator, trace, self.magic_context.as_deref())
    }
}

/// The files beside the source that a load of `loaded` read or looked for: every sidecar
/// candidate of the session and of its sub-agents (a missing one counts: creating it changes
/// the load), the rules file and the Magic Context database with its WAL. With the source's own
/// files ([`crate::watch::WatchTarget::fingerprint`]) they are everything the load is made from.
pub fn files_beside_source(args: &LoadOptions, loaded: &LoadedSession) -> Vec<PathBuf> {
    let mut out = Vec::new();
    sidecar_candidates(&sidecar_locator(args), loaded, &mut out);
    out.extend(args.rules.clone());
    if let Some(db) = args
        .magic_context
        .clone()
        .or_else(magic_context::default_db_path)
    {
        out.push(crate::watch::side_file(&db, "-wal"));
        out.push(db);
    }
    out
}

/// Where the loading flags look for sidecars: `--sidecars`, the export's dir, the data dir.
fn sidecar_locator(args: &LoadOptions) -> SidecarLocator {
    SidecarLocator {
        dir: args.sidecars.clone(),
        export_file: export_path(args.path.as_deref()).map(Path::to_path_buf),
        data_dir: SidecarLocator::default_data_dir(),
    }
}

fn sidecar_candidates(locator: &SidecarLocator, l: &LoadedSession, out: &mut Vec<PathBuf>) {
    for kind in [
        SidecarKind::Annotations,
        SidecarKind::Tiers,
        SidecarKind::Probes,
    ] {
        out.extend(locator.candidates(&l.trace.session.id, kind));
    }
    let child = locator.for_child();
    for c in &l.children {
        sidecar_candidates(&child, c, out);
    }
}

/// Sidecars and Magic Context rows of one session.
fn options_for(
    base: &EpisodeOptions,
    locator: &SidecarLocator,
    trace: &Trace,
    mc_db: Option<&Path>,
) -> Result<EpisodeOptions, LoadSessionError> {
    let mut o = base.clone();
    o.sidecars = Sidecars::find(locator, &trace.session.id)?;
    let wants_mc = o.segmentation == Segmentation::MagicContext
        || (o.tiers == TierSource::External && mc_db.is_some());
    if wants_mc {
        let db = mc_db
            .map(Path::to_path_buf)
            .or_else(magic_context::default_db_path);
        match db {
            Some(db) if db.is_file() => {
                let read = magic_context::read_session(&db, &trace.session.id)?;
                o.compartments = read.rows;
                o.magic_context_meta = read.meta;
                o.magic_context_db = Some(db);
            }
            other => {
                if o.segmentation == Segmentation::MagicContext {
                    return Err(LoadSessionError::NoMagicContext(other.map_or_else(
                        || "(no data dir)".to_owned(),
                        |p| p.display().to_string(),
                    )));
                }
            }
        }
    }
    Ok(o)
}

/// Build a loaded session from a trace with an in-memory tokenizer (tests, generated traces).
pub fn from_trace(trace: Trace, opts: &EpisodeOptions) -> LoadedSession {
    let tokenizer = Tokenizer::in_memory(opts.tokenizer);
    let mut l = from_trace_with(trace, opts, &tokenizer);
    l.token_stats = tokenizer.stats();
    l
}

/// Episodes drafted and counted together (see [`from_trace_with`]): enough to keep both cores
/// busy, few enough that one window's texts are small.
const DRAFT_WINDOW: usize = 512;

/// Build a loaded session from a trace with a given tokenizer (its cache is shared).
pub fn from_trace_with(
    mut trace: Trace,
    opts: &EpisodeOptions,
    tokenizer: &Tokenizer,
) -> LoadedSession {
    // The readers grow the messages and their parts by doubling; the session keeps them for its
    // life, so the spare capacity goes now (up to half of each vector).
    trace.messages.shrink_to_fit();
    for m in &mut trace.messages {
        m.parts.shrink_to_fit();
    }
    stored_system::count(&mut trace, tokenizer);
    let mut warnings = Vec::new();
    let rules = match &opts.rules {
        Some(r) => r.clone(),
        None => match Rules::embedded() {
            Ok(r) => r,
            Err(e) => {
                // Only a broken build can get here (the embedded file is tested).
                warnings.push(format!("embedded rules invalid: {e}"));
                return empty(trace, opts, tokenizer, warnings);
            }
        },
    };
    let annotations = opts.sidecars.annotations.as_ref().map(|(_, a)| a);

    // Explicit starts for annotations / magic-context segmentation.
    let mut explicit = BTreeSet::new();
    let mut covered_until = None;
    // Compartment ranges (first, last message index, row).
    let mut compartments: Vec<(usize, usize, usize)> = Vec::new();
    for (k, c) in opts.compartments.iter().enumerate() {
        match magic_context::resolve_range(c, &trace) {
            Some((a, b)) => compartments.push((a, b, k)),
            None => warnings.push(format!(
                "magic-context: compartment {} ({}..{}) does not fit the trace",
                c.sequence, c.start_message, c.end_message
            )),
        }
    }
    match opts.segmentation {
        Segmentation::Annotations => {
            for id in annotations
                .map(|a| a.episode_starts.as_slice())
                .unwrap_or(&[])
            {
                match trace.message_index(id) {
                    Some(i) => {
                        explicit.insert(i);
                    }
                    None => {
                        warnings.push(format!("annotations: episode start {id} not in the trace"))
                    }
                }
            }
            if annotations.is_none() {
                warnings.push(
                    "--episodes annotations: no annotations sidecar found; one episode".to_owned(),
                );
            }
        }
        Segmentation::MagicContext => {
            for &(a, b, _) in &compartments {
                explicit.insert(a);
                covered_until = Some(covered_until.map_or(b, |x: usize| x.max(b)));
            }
        }
        _ => {}
    }
    let segments = segment::segment(
        &trace,
        opts.segmentation,
        opts.max_requests,
        &explicit,
        covered_until,
    );
    let req_of = classify::request_of_message(&trace);
    let todos = crate::episode::segment::todo_changes(&trace);
    let artefacts = tiers::artefact_ids(&trace);
    // External tiers replace generated ones episode by episode; the rest are `source`.
    let strategy = match opts.tiers {
        TierSource::External => Strategy::Source,
        t => t.strategy(),
    };

    // Classify and draft every episode (in parallel), then count all texts in one batch.
    let inputs = DraftInputs {
        trace: &trace,
        opts,
        rules: &rules,
        annotations,
        compartments: &compartments,
        req_of: &req_of,
        todos: &todos,
        artefacts: &artefacts,
        strategy,
    };
    // Episodes are drafted, counted and finalized a window at a time: the texts of one window
    // are all that is held before counting (not the whole session's, which grow with it), and
    // dropped after it when the caller asked for counts only. One count batch
    // spans the windows, so the counts and the statistics are those of a single batch.
    let mut batch = tokenizer.batch();
    let mut episodes_without_external = 0usize;
    let mut tier_lineage = Vec::new();
    let mut finalized = Vec::with_capacity(segments.len());
    let progress = |done: usize| {
        opts.progress.report(
            progress::LoadStage::Episodes,
            done as u64,
            segments.len() as u64,
        )
    };
    progress(0);
    for (w, window) in segments.chunks(DRAFT_WINDOW).enumerate() {
        progress(w * DRAFT_WINDOW);
        let drafted: Vec<Drafted> = {
            use rayon::prelude::*;
            window
                .par_iter()
                .enumerate()
                .map(|(k, seg)| draft_episode(&inputs, w * DRAFT_WINDOW + k, seg))
                .collect()
        };
        let mut pending: Vec<Pending> = Vec::with_capacity(drafted.len());
        for d in drafted {
            pending.push(d.pending);
            warnings.extend(d.warnings);
            tier_lineage.extend(d.lineage);
            episodes_without_external += usize::from(d.without_external);
        }
        // The window's texts in one part of the batch; `ends[k]`: where episode k's end in it.
        let mut texts: Vec<&str> = Vec::new();
        let mut ends = Vec::with_capacity(pending.len());
        for (_, ds, ..) in &pending {
            texts.extend(ds.iter().flat_map(|d| d.texts()));
            ends.push(texts.len());
        }
        let counts = batch.count(&texts);
        drop(texts);
        // Each episode's counts, in the order its drafts list their texts; finalized in parallel.
        let slices: Vec<&[u32]> = ends
            .iter()
            .scan(0, |start, &end| {
                let mine = counts.get(*start..end).unwrap_or_default();
                *start = end;
                Some(mine)
            })
            .collect();
        use rayon::prelude::*;
        finalized.par_extend(pending.into_par_iter().zip(slices).map(
            |((mut ep, drafts, notes, row, record), counts)| {
                let mut counts = counts.iter().copied();
                let (mut reps, mut tier_notes) = match row {
                    Some(_) => tiers::finalize_as_given(&ep.id, drafts, &mut counts),
                    None => tiers::finalize(&ep.id, drafts, &mut counts),
                };
                if opts.drop_tier_texts {
                    reps.values_mut().for_each(Representation::drop_texts);
                }
                tier_notes.extend(notes);
                ep.tiers = reps;
                ep.tier_notes = tier_notes;
                (ep, row, record)
            },
        ));
    }
    progress(segments.len());
    if episodes_without_external > 0 {
        // Said once for the session, not only per episode: the header claims external tiers.
        warnings.push(format!(
            "--tiers external: {episodes_without_external} of {} episodes have no external tiers \
             (no *.tiers.json or Magic Context compartment covers them); their source tiers are used",
            segments.len()
        ));
    }
    let mut episodes = Vec::with_capacity(finalized.len());
    let mut mc_episodes = Vec::with_capacity(finalized.len());
    let mut records = Vec::with_capacity(finalized.len());
    for (ep, row, record) in finalized {
        records.extend(record);
        mc_episodes.push(row.map(|r| {
            let c = &opts.compartments[r];
            magic_context::CompartmentRef {
                sequence: c.sequence,
                legacy_tier: c.legacy_tier(),
                importance: c.importance,
            }
        }));
        episodes.push(ep);
    }
    link_continuations(&trace, &mut episodes);

    let probes = opts
        .sidecars
        .probes
        .as_ref()
        .map(|(_, p)| p.clone())
        .unwrap_or_default();
    let milestones = milestones(&trace);
    let mut compaction = size_compaction_calls(&trace, tokenizer);
    compaction.summary_heads = summary_heads::count(&trace, &episodes, tokenizer);
    let mut sidecar_paths = Vec::new();
    if let Some((p, _)) = &opts.sidecars.annotations {
        sidecar_paths.push(("annotations".to_owned(), p.clone()));
    }
    if let Some((p, _)) = &opts.sidecars.tiers {
        sidecar_paths.push(("tiers".to_owned(), p.clone()));
    }
    if let Some((p, _)) = &opts.sidecars.probes {
        sidecar_paths.push(("probes".to_owned(), p.clone()));
    }
    if let Some(p) = &opts.magic_context_db {
        sidecar_paths.push(("magic-context".to_owned(), p.clone()));
    }
    warnings.extend(opts.magic_context_meta.notes.iter().cloned());
    let magic_context =
        (mc_episodes.iter().any(Option::is_some)).then(|| magic_context::MagicContextSession {
            db: opts.magic_context_db.clone().unwrap_or_default(),
            schema_version: opts.magic_context_meta.schema_version,
            episodes: mc_episodes,
            mutations: opts.magic_context_meta.mutations.clone(),
        });
    LoadedSession {
        trace,
        episodes,
        records,
        probes,
        milestones,
        tokenizer: tokenizer.label(),
        children: Vec::new(),
        segmentation: opts.segmentation,
        tier_source: opts.tiers,
        rules_origin: rules.origin.clone(),
        sidecar_paths,
        token_stats: tokenizer.stats(),
        warnings,
        magic_context,
        tier_lineage,
        compaction,
        calibration: None,
        prep_cache: Default::default(),
    }
}

/// Build each recorded summary call as the agent sent it (its adapter knows how) and count it,
/// with the fixed summary prompt (what a simulated call adds).
fn size_compaction_calls(trace: &Trace, tokenizer: &Tokenizer) -> CompactionSizes {
    let calls = crate::trace::adapter::adapter(trace.origin.agent)
        .map(|a| a.summary_calls(trace))
        .unwrap_or_default();
    let n = calls.built.len();
    let mut texts: Vec<&str> = calls.built.iter().map(|r| r.text.as_str()).collect();
    // What each call's text shares with the previous one's, from their start (whole chars).
    texts.extend(
        calls
            .built
            .windows(2)
            .map(|w| crate::text::common_head(&w[0].text, &w[1].text)),
    );
    texts.push(&calls.fixed_prompt);
    let mut counts = tokenizer.count_many(&texts);
    let counted = counts.pop().map_or(0, u64::from);
    let prompt_tokens = calls.fixed_prompt_tokens.unwrap_or(counted);
    let shared = counts.split_off(n.min(counts.len()));
    let mut sized: Vec<_> = calls
        .built
        .iter()
        .zip(counts)
        .map(|(r, n)| r.sized(u64::from(n)))
        .collect();
    for (c, s) in sized.iter_mut().skip(1).zip(shared) {
        c.shared_with_previous = u64::from(s);
    }
    CompactionSizes {
        calls: sized,
        shape: trace.wire.compaction_shape,
        prompt_tokens,
        prompt_text: calls.fixed_prompt,
        prompt: calls.prompt,
        summary_heads: Vec::new(),
    }
}

fn empty(
    trace: Trace,
    opts: &EpisodeOptions,
    tokenizer: &Tokenizer,
    warnings: Vec<String>,
) -> LoadedSession {
    LoadedSession {
        trace,
        episodes: Vec::new(),
        records: Vec::new(),
        probes: Vec::new(),
        milestones: BTreeSet::new(),
        tokenizer: tokenizer.label(),
        children: Vec::new(),
        segmentation: opts.segmentation,
        tier_source: opts.tiers,
        rules_origin: String::new(),
        sidecar_paths: Vec::new(),
        token_stats: tokenizer.stats(),
        warnings,
        magic_context: None,
        tier_lineage: Vec::new(),
        compaction: CompactionSizes::NONE,
        calibration: None,
        prep_cache: Default::default(),
    }
}

/// A continuation continues the last non-compaction episode before it.
fn link_continuations(trace: &Trace, episodes: &mut [Episode]) {
    for k in 0..episodes.len() {
        let first = &trace.messages[episodes[k].first_message];
        let is_cont = matches!(
            first.user_kind,
            Some(UserKind::ContinueAfterCompaction) | Some(UserKind::PromptReplayed)
        );
        if !is_cont {
            continue;
        }
        let prev = episodes[..k]
            .iter()
            .rev()
            .find(|e| !e.has_kind(EpisodeKind::Compaction))
            .map(|e| e.id.clone());
        episodes[k].continues = prev;
    }
}

/// Request indices of todo status changes and compaction summaries.
pub fn milestones(trace: &Trace) -> BTreeSet<usize> {
    let req_of = classify::request_of_message(trace);
    // The request of the step that wrote the todo (a 0.x message holds several).
    let mut s: BTreeSet<usize> = segment::todo_changes(trace)
        .iter()
        .filter_map(|c| {
            let first = trace
                .requests
                .partition_point(|r| r.message_index < c.message_index);
            trace.requests[first..]
                .iter()
                .take_while(|r| r.message_index == c.message_index)
                .find(|r| r.step.unwrap_or(0) == c.step)
                .map(|r| r.index)
                .or_else(|| req_of.get(c.message_index).copied().flatten())
        })
        .collect();
    s.extend(trace.compactions.iter().filter_map(|c| c.summary_request));
    s
}

/// The path of an export file given on the command line, if that is what it is.
fn export_path(path: Option<&Path>) -> Option<&Path> {
    path.filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
}
