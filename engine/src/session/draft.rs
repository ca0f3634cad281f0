//! Drafting one episode: classify it, apply the annotations, build its full tier, its canonical
//! record and the tiers below (or take written ones). Each episode is independent of the others
//! here, so [`super::from_trace_with`] drafts them on every core and merges what they say in
//! episode order.

use std::collections::{BTreeMap, BTreeSet};

use super::EpisodeOptions;
use crate::episode::classify;
use crate::episode::external;
use crate::episode::options::TierSource;
use crate::episode::record::{self, EpisodeRecord};
use crate::episode::record_view;
use crate::episode::rules::Rules;
use crate::episode::segment::{self, Segmentation};
use crate::episode::tiers::{self, Draft};
use crate::episode::{Episode, EpisodeKind, Pin, RetentionClass, Strategy};
use crate::formats::magic_context;
use crate::trace::Trace;

fn request_range(trace: &Trace, a: usize, b: usize) -> (Option<usize>, Option<usize>) {
    // Requests are in message order (derive builds them so): two binary searches instead of a
    // scan of every request per episode, which made loading quadratic.
    let reqs = &trace.requests;
    let lo = reqs.partition_point(|r| r.message_index < a);
    let hi = reqs.partition_point(|r| r.message_index <= b);
    if lo < hi {
        (Some(reqs[lo].index), Some(reqs[hi - 1].index))
    } else {
        (None, None)
    }
}

/// What the rules decided about one episode and an annotations sidecar may overrule: its class
/// and floor, each with its reasons, and its pins.
struct Judgement {
    class: RetentionClass,
    floor: crate::episode::Tier,
    class_reasons: Vec<String>,
    floor_reasons: Vec<String>,
    pins: Vec<Pin>,
}

/// Apply the annotations that fall inside `seg` to its judgement; pins that cannot be found
/// become warnings.
fn apply_annotations(
    trace: &Trace,
    seg: &segment::Segment,
    a: &crate::episode::sidecar::Annotations,
    j: &mut Judgement,
    warnings: &mut Vec<String>,
) {
    let Judgement {
        class,
        floor,
        class_reasons,
        floor_reasons,
        pins,
    } = j;
    let inside = |id: &str| {
        trace
            .message_index(id)
            .is_some_and(|i| i >= seg.first_message && i <= seg.last_message)
    };
    for o in a.overrides.iter().filter(|o| inside(&o.message_id)) {
        let why = o
            .reason
            .clone()
            .unwrap_or_else(|| "no reason given".to_owned());
        if let Some(c) = o.class {
            *class = c;
            class_reasons.push(format!(
                "class {}: annotation on {} — {why}",
                c.as_str(),
                o.message_id
            ));
        }
        if let Some(f) = o.floor {
            *floor = f;
            floor_reasons.push(format!("floor {f}: annotation on {} — {why}", o.message_id));
        }
    }
    // Keep the floor within what the class permits.
    if *class == RetentionClass::Pin && *floor != crate::episode::Tier::Full {
        *floor = crate::episode::Tier::Full;
        floor_reasons.push("floor full: class pin (annotation)".to_owned());
    }
    if *class != RetentionClass::Discardable && *floor == crate::episode::Tier::Dropped {
        *floor = crate::episode::Tier::Anchor;
        floor_reasons.push(format!(
            "floor anchor: class {} may not be dropped",
            class.as_str()
        ));
    }
    for p in a.pins.iter().filter(|p| inside(&p.message_id)) {
        let Some(m) = trace.message(&p.message_id) else {
            continue;
        };
        let text = m.text();
        let span = match (&p.text, p.start, p.end) {
            (Some(t), _, _) if text.contains(t.as_str()) => Some(t.clone()),
            (Some(t), _, _) => {
                warnings.push(format!(
                    "annotations: pin {:?} not found in {}",
                    t, p.message_id
                ));
                None
            }
            (None, Some(s), e) => {
                let chars: Vec<char> = text.chars().collect();
                let e = e.unwrap_or(chars.len()).min(chars.len());
                (s < e).then(|| chars[s..e].iter().collect())
            }
            (None, None, _) => Some(text.clone()),
        };
        if let Some(span) = span.filter(|s| !s.trim().is_empty()) {
            if !pins.iter().any(|x| x.text == span) {
                pins.push(Pin {
                    message_id: p.message_id.clone(),
                    text: span,
                    reason: p
                        .reason
                        .clone()
                        .map_or_else(|| "annotation".to_owned(), |r| format!("annotation: {r}")),
                });
            }
        }
    }
}

/// What drafting one episode gives: the episode with its drafts (see `Pending`), and what it
/// says for the whole session.
pub(super) struct Drafted {
    pub(super) pending: Pending,
    pub(super) warnings: Vec<String>,
    pub(super) lineage: Vec<crate::episode::lineage::TierLineage>,
    pub(super) without_external: bool,
}

/// Per episode: the episode, its drafts, its tier notes, its Magic Context compartment row
/// (its tiers are kept as given) and its canonical record (when kept).
pub(super) type Pending = (
    Episode,
    Vec<Draft>,
    Vec<String>,
    Option<usize>,
    Option<EpisodeRecord>,
);

/// What every episode's drafting reads of the session.
pub(super) struct DraftInputs<'a> {
    pub(super) trace: &'a Trace,
    pub(super) opts: &'a EpisodeOptions,
    pub(super) rules: &'a Rules,
    pub(super) annotations: Option<&'a crate::episode::sidecar::Annotations>,
    pub(super) compartments: &'a [(usize, usize, usize)],
    pub(super) req_of: &'a [Option<usize>],
    pub(super) todos: &'a [crate::episode::segment::TodoChange],
    pub(super) artefacts: &'a BTreeSet<String>,
    pub(super) strategy: Strategy,
}

/// Classify episode `k` (segment `seg`) and draft its tiers. Episodes are independent here, so
/// they are drafted in parallel; what each says is merged in episode order.
pub(super) fn draft_episode(inputs: &DraftInputs<'_>, k: usize, seg: &segment::Segment) -> Drafted {
    let DraftInputs {
        trace,
        opts,
        rules,
        annotations,
        compartments,
        req_of,
        todos,
        artefacts,
        strategy,
    } = *inputs;
    let mut warnings = Vec::new();
    let mut tier_lineage = Vec::new();
    let mut without_external = false;
    let id = format!("E{k}");
    let mut cl = classify::classify_with_todos(trace, seg, rules, req_of, todos);
    let mut notes = Vec::new();
    let mut judged = Judgement {
        class: cl.class,
        floor: cl.floor,
        class_reasons: std::mem::take(&mut cl.class_reasons),
        floor_reasons: std::mem::take(&mut cl.floor_reasons),
        pins: std::mem::take(&mut cl.pins),
    };
    if let Some(a) = annotations {
        apply_annotations(trace, seg, a, &mut judged, &mut warnings);
    }
    let Judgement {
        class,
        floor,
        class_reasons,
        floor_reasons,
        pins,
    } = judged;
    cl.pins = pins;
    if annotations.is_some() && !cl.pins.is_empty() && !cl.kinds.contains(&EpisodeKind::Constraint)
    {
        cl.kinds.push(EpisodeKind::Constraint);
        cl.kinds.sort();
    }
    let ids: Vec<String> = trace.messages[seg.first_message..=seg.last_message]
        .iter()
        .map(|m| m.id.clone())
        .collect();
    let full = tiers::full_draft(trace, seg, strategy, artefacts);
    let full_texts: Vec<(usize, &str)> = full
        .chunks
        .iter()
        .map(|c| (c.message_index, c.text.as_str()))
        .collect();
    // The full tier's text and identifiers: found once, for the record and the source
    // generator.
    let full_text = tiers::joined(&full);
    let identifiers = crate::episode::needles::identifiers(&full_text);
    let source = tiers::EpisodeSource {
        trace,
        episode_id: &id,
        seg,
        classified: &cl,
        rules,
        artefacts,
    };
    let wants_record = opts.keep_records || opts.tiers == TierSource::Record;
    let record = wants_record.then(|| {
        record::build(&record::Inputs {
            episode: &source,
            todos,
            full: &full_texts,
            full_text: &full_text,
            identifiers: &identifiers,
        })
    });
    let mut drafts = match (strategy, &record) {
        (Strategy::Record, Some(r)) => record_view::drafts(full, r),
        (_, _) => tiers::generate_below(&source, strategy, full, &full_text, &identifiers),
    };
    let mut importance = None;
    let mut compartment_row = None;
    if opts.tiers == TierSource::External || opts.segmentation == Segmentation::MagicContext {
        let mut ext: Vec<Draft> = Vec::new();
        if let Some((_, tf)) = &opts.sidecars.tiers {
            let first = &trace.messages[seg.first_message].id;
            let last = &trace.messages[seg.last_message].id;
            if let Some(e) = tf
                .episodes
                .iter()
                .find(|e| &e.first_message_id == first && &e.last_message_id == last)
            {
                let (d, n) = external::from_tiers_file(e, &ids, seg.first_message);
                ext = d;
                notes.extend(n);
                importance = e.importance;
                tier_lineage.extend(crate::episode::lineage::of_entry(&id, e));
            }
        }
        if ext.is_empty() {
            // Under magic-context segmentation the episode starts at its compartment; under
            // another segmentation the compartment must cover exactly the episode.
            let by_mc = opts.segmentation == Segmentation::MagicContext;
            let hit = compartments
                .iter()
                .find(|(a, b, _)| *a == seg.first_message && (by_mc || *b == seg.last_message));
            if let Some(&(_, _, row)) = hit {
                let c = &opts.compartments[row];
                let dates = opts
                    .magic_context_dates
                    .offset_minutes()
                    .and_then(|m| magic_context::heading_dates(c, trace, m));
                let dates = dates.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
                ext = external::from_compartment(c, &ids, seg.first_message, dates);
                importance = Some(c.importance / 100.0);
                compartment_row = Some(row);
                if c.rebase_status.as_deref().is_some_and(|s| s != "ok") {
                    notes.push(format!(
                        "magic-context rebase_status {:?}: still rendered; ctx_expand refuses its range",
                        c.rebase_status.as_deref().unwrap_or("")
                    ));
                }
                if c.importance != c.base_importance {
                    notes.push(format!(
                        "magic-context importance {} (v98 re-score; stored {})",
                        c.importance, c.base_importance
                    ));
                }
                if !c.title.is_empty() {
                    cl.title = c.title.clone();
                }
                if let Some(t) = &c.episode_type {
                    notes.push(format!("magic-context episode_type: {t}"));
                }
            }
        }
        if !ext.is_empty() {
            if compartment_row.is_some() {
                // Magic Context's text is what it injects: a missing pin is reported (and
                // counted as a pin violation where it is shown), never added.
                for d in &ext {
                    let text: String = d.texts().collect::<Vec<_>>().join("\n");
                    for p in cl.pins.iter().filter(|p| !text.contains(p.text.as_str())) {
                        notes.push(format!(
                            "magic-context {} lacks pinned span \"{}\"",
                            d.tier,
                            crate::text::clip_chars(&p.text, 60)
                        ));
                    }
                }
            } else {
                // Someone else's text may lack a pin; append it as our generators do, and
                // say so.
                for d in &mut ext {
                    for p in tiers::ensure_pins(d, &cl.pins) {
                        notes.push(format!(
                            "external {} lacked pinned span \"{}\"; appended",
                            d.tier,
                            crate::text::clip_chars(&p, 60)
                        ));
                    }
                }
            }
            // Written tiers replace generated ones; the full tier stays the messages as
            // sent unless the sidecar gives one (a historian writes only the lower tiers).
            if !ext.iter().any(|d| d.tier == crate::episode::Tier::Full) {
                if let Some(full) = drafts.iter().find(|d| d.tier == crate::episode::Tier::Full) {
                    ext.insert(0, full.clone());
                }
            }
            drafts = ext;
        } else if opts.tiers == TierSource::External {
            notes.push("no external tiers for this episode; source tiers used".to_owned());
            without_external = true;
        }
    }
    let (first_request, last_request) = request_range(trace, seg.first_message, seg.last_message);
    let ep = Episode {
        id: id.clone(),
        index: k,
        first_message: seg.first_message,
        last_message: seg.last_message,
        first_request,
        last_request,
        time_start: trace.messages[seg.first_message].time_created,
        time_end: trace.messages[seg.last_message]
            .time_completed
            .unwrap_or(trace.messages[seg.last_message].time_created),
        title: cl.title,
        kinds: cl.kinds,
        class,
        floor,
        class_reasons,
        floor_reasons,
        pins: cl.pins,
        keys: cl.keys,
        continues: None,
        children: cl.children,
        tiers: BTreeMap::new(),
        tier_notes: Vec::new(),
        importance,
    };
    Drafted {
        pending: (ep, drafts, notes, compartment_row, record),
        warnings,
        lineage: tier_lineage,
        without_external,
    }
}
