//! Policies as data: a TOML file with a `kind`, a description and knob values (MODEL §4).
//!
//! The knobs each kind understands, with their defaults, ranges and help, are declared in
//! [`super::knobs`]; a file (built-in or the user's) only sets values. `--set KEY=VALUE` overrides
//! go through the same validation as the file, so a bad value is reported the same way wherever
//! it came from.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::knobs;
use crate::text::{excerpt, excerpt_lines};

pub use crate::policy::kinds::{Floors, KindRole, PolicyKind};

/// A knob value: a number, a switch or one of a fixed set of words.
/// Serializes as a bare JSON number, boolean or string.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum KnobValue {
    /// A number (integers are stored as whole floats).
    Num(f64),
    /// A switch.
    Bool(bool),
    /// One of the knob's `choices`.
    Choice(String),
}

impl fmt::Display for KnobValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnobValue::Num(n) => write!(f, "{n}"),
            KnobValue::Bool(b) => write!(f, "{b}"),
            KnobValue::Choice(s) => f.write_str(s),
        }
    }
}

/// The declaration of one knob: what sliders and the sweep read (`tierscope policies --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnobSpec {
    /// Key in the TOML file and in `--set KEY=VALUE`.
    pub name: String,
    /// The value this policy uses when nothing overrides it (its TOML value, else the kind's).
    pub default: KnobValue,
    /// Inclusive bounds and slider step for numeric knobs (`None` for switches and choices).
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub step: Option<f64>,
    /// Allowed words for a choice knob (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// Whole numbers only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub integer: bool,
    /// One line for people.
    pub help: String,
    /// A few letters for a narrow header (`demote_at` → `dem`); `None`: the name.
    #[serde(skip)]
    pub short: Option<&'static str>,
}

impl KnobSpec {
    /// The same knob with a few letters for a narrow header.
    pub fn short(mut self, short: &'static str) -> KnobSpec {
        self.short = Some(short);
        self
    }

    /// What a narrow header calls it.
    pub fn short_name(&self) -> &str {
        self.short.unwrap_or(&self.name)
    }

    /// Parse and check a value given as text (`--set`), against this spec.
    pub fn parse(&self, text: &str) -> Result<KnobValue, String> {
        let text = text.trim();
        let v = match &self.default {
            KnobValue::Num(_) => KnobValue::Num(
                text.parse::<f64>()
                    .map_err(|_| format!("expected a number, got {text:?}"))?,
            ),
            KnobValue::Bool(_) => match text.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => KnobValue::Bool(true),
                "false" | "no" | "off" | "0" => KnobValue::Bool(false),
                _ => return Err(format!("expected true or false, got {text:?}")),
            },
            KnobValue::Choice(_) => KnobValue::Choice(text.to_owned()),
        };
        self.check(v)
    }

    /// Check a typed value against this spec's type, range and choices.
    pub fn check(&self, v: KnobValue) -> Result<KnobValue, String> {
        match (&self.default, v) {
            (KnobValue::Num(_), KnobValue::Num(n)) => {
                if !n.is_finite() {
                    return Err(format!("{n} is not a finite number"));
                }
                if self.integer && n.fract() != 0.0 {
                    return Err(format!("expected a whole number, got {n}"));
                }
                if let Some(min) = self.min {
                    if n < min {
                        return Err(format!("{n} is below the minimum {min}"));
                    }
                }
                if let Some(max) = self.max {
                    if n > max {
                        return Err(format!("{n} is above the maximum {max}"));
                    }
                }
                Ok(KnobValue::Num(n))
            }
            (KnobValue::Bool(_), KnobValue::Bool(b)) => Ok(KnobValue::Bool(b)),
            (KnobValue::Choice(_), KnobValue::Choice(s)) => {
                if self.choices.iter().any(|c| c == &s) {
                    Ok(KnobValue::Choice(s))
                } else {
                    Err(format!("{s:?} is not one of {}", self.choices.join(", ")))
                }
            }
            (_, v) => Err(format!("{v} has the wrong type for this knob")),
        }
    }
}

/// Where a policy was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum PolicySource {
    /// Shipped in the crate (`src/policy/builtin/<name>.toml`).
    Builtin,
    /// A user's TOML file.
    File(PathBuf),
}

/// A resolved policy: its kind, description and the value of every knob its kind declares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Policy {
    pub name: String,
    pub kind: PolicyKind,
    pub description: String,
    /// Bumped by the policy's author when its behaviour changes; goes into selection records.
    pub version: u32,
    /// Whether the policy keeps every episode at or above its floor (MODEL §2 law 1). For
    /// `decay` this is the `respect_floors` knob; for the other kinds the file declares it.
    pub respect_floors: bool,
    /// Every knob of the kind with its resolved value, in name order.
    pub knobs: BTreeMap<String, KnobValue>,
    /// The knob declarations, with `default` = this policy's value before `--set` overrides.
    #[serde(skip)]
    pub specs: Vec<KnobSpec>,
    /// Keys set by `--set` (for display).
    pub overridden: Vec<String>,
    pub source: PolicySource,
}

impl Policy {
    /// The knobs a header shows for this policy after the overridden ones (its kind's say).
    pub fn headline_knobs(&self) -> &'static [&'static str] {
        crate::policy::kinds::headline_knobs(self)
    }

    /// Whether this policy changes tiers at pressure thresholds (its kind's answer).
    pub fn pressure_driven(&self) -> bool {
        self.thresholds().is_some()
    }

    /// The pressure thresholds this policy changes tiers at, when it is pressure-driven.
    pub fn thresholds(&self) -> Option<crate::policy::kinds::Thresholds> {
        crate::policy::kinds::thresholds(self)
    }

    /// Pairs of its knobs worth sweeping first, most telling first (its kind's answer).
    pub fn sweep_pairs(&self) -> &'static [(&'static str, &'static str)] {
        crate::policy::kinds::sweep_pairs(self)
    }

    /// How long a demoted episode waits before this policy may promote it again, and the knob
    /// that says so (its kind's answer); `None` when it never waits.
    pub fn promotion_wait(&self) -> Option<crate::policy::kinds::PromotionWait> {
        crate::policy::kinds::promotion_wait(self)
    }

    /// What the engine treats this policy's kind as, beyond its decision.
    pub fn role(&self) -> KindRole {
        self.kind.role()
    }

    /// A numeric knob (0 when the kind has no such knob; validation makes that unreachable for
    /// the knobs each kind declares).
    pub fn num(&self, key: &str) -> f64 {
        match self.knobs.get(key) {
            Some(KnobValue::Num(n)) => *n,
            Some(KnobValue::Bool(b)) => f64::from(u8::from(*b)),
            _ => 0.0,
        }
    }
    /// A switch knob (false when absent).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.knobs.get(key), Some(KnobValue::Bool(true)))
    }
    /// A choice knob ("" when absent).
    pub fn choice(&self, key: &str) -> &str {
        match self.knobs.get(key) {
            Some(KnobValue::Choice(s)) => s,
            _ => "",
        }
    }
    /// The declaration of a knob.
    pub fn spec(&self, key: &str) -> Option<&KnobSpec> {
        self.specs.iter().find(|s| s.name == key)
    }
    /// Whether the replay reads knob `key` with this policy's settings (see
    /// [`knobs::is_read`]).
    pub fn reads(&self, key: &str) -> bool {
        knobs::is_read(self, key)
    }

    /// Apply `--set KEY=VALUE` overrides, then re-check the kind's constraints.
    pub fn with_overrides(mut self, overrides: &[(String, String)]) -> Result<Policy, PolicyError> {
        for (key, text) in overrides {
            let spec = self.spec(key).ok_or_else(|| PolicyError::UnknownKnob {
                policy: self.name.clone(),
                key: key.clone(),
                known: self.specs.iter().map(|s| s.name.clone()).collect(),
            })?;
            let v = spec.parse(text).map_err(|reason| PolicyError::BadValue {
                policy: self.name.clone(),
                key: key.clone(),
                reason,
            })?;
            self.knobs.insert(key.clone(), v);
            if !self.overridden.contains(key) {
                self.overridden.push(key.clone());
            }
        }
        if let Floors::Knob(knob) = self.kind.floors() {
            self.respect_floors = self.flag(knob);
        }
        knobs::check_constraints(&self).map_err(|reason| PolicyError::Constraint {
            policy: self.name.clone(),
            reason,
        })?;
        Ok(self)
    }
}

/// Everything that can be wrong with a policy name, file or override.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("no built-in policy named \"{}\" and no such file (built-ins: {})", excerpt(.name), .builtins.join(", "))]
    NotFound { name: String, builtins: Vec<String> },
    #[error("cannot read policy file {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("policy file {path} is not valid TOML: {}", excerpt_lines(.reason))]
    Toml { path: String, reason: String },
    #[error("policy \"{}\": unknown kind \"{}\" (expected one of full, truncate, flat, progressive, decay, oracle)", excerpt(.policy), excerpt(.kind))]
    UnknownKind { policy: String, kind: String },
    #[error("policy \"{}\" has no knob \"{}\" (its knobs: {})", excerpt(.policy), excerpt(.key), .known.join(", "))]
    UnknownKnob {
        policy: String,
        key: String,
        known: Vec<String>,
    },
    #[error("policy \"{}\": bad value for {}: {}", excerpt(.policy), excerpt(.key), excerpt(.reason))]
    BadValue {
        policy: String,
        key: String,
        reason: String,
    },
    #[error("policy \"{}\": {}", excerpt(.policy), excerpt(.reason))]
    Constraint { policy: String, reason: String },
    #[error("bad override \"{}\": expected KEY=VALUE", excerpt(.text))]
    BadOverride { text: String },
}

/// The file format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    name: Option<String>,
    kind: String,
    #[serde(default)]
    description: String,
    #[serde(default = "one")]
    version: u32,
    respect_floors: Option<bool>,
    #[serde(default)]
    knobs: toml::Table,
}

fn one() -> u32 {
    1
}

/// Parse a policy file's text. `fallback_name` names it when the file has no `name`.
pub fn parse_policy(
    text: &str,
    fallback_name: &str,
    origin: &str,
    source: PolicySource,
) -> Result<Policy, PolicyError> {
    let file: PolicyFile = toml::from_str(text).map_err(|e| PolicyError::Toml {
        path: origin.to_owned(),
        reason: e.to_string(),
    })?;
    let name = file.name.unwrap_or_else(|| fallback_name.to_owned());
    let kind = PolicyKind::ALL
        .iter()
        .copied()
        .find(|k| k.as_str() == file.kind)
        .ok_or_else(|| PolicyError::UnknownKind {
            policy: name.clone(),
            kind: file.kind.clone(),
        })?;
    let mut specs = knobs::specs(kind);
    let mut knobs: BTreeMap<String, KnobValue> = specs
        .iter()
        .map(|s| (s.name.clone(), s.default.clone()))
        .collect();
    for (key, value) in &file.knobs {
        let spec =
            specs
                .iter()
                .find(|s| &s.name == key)
                .ok_or_else(|| PolicyError::UnknownKnob {
                    policy: name.clone(),
                    key: key.clone(),
                    known: specs.iter().map(|s| s.name.clone()).collect(),
                })?;
        let typed = match value {
            toml::Value::Integer(i) => KnobValue::Num(*i as f64),
            toml::Value::Float(f) => KnobValue::Num(*f),
            toml::Value::Boolean(b) => KnobValue::Bool(*b),
            toml::Value::String(s) => KnobValue::Choice(s.clone()),
            other => {
                return Err(PolicyError::BadValue {
                    policy: name.clone(),
                    key: key.clone(),
                    reason: format!("unsupported TOML value {other}"),
                })
            }
        };
        let v = spec.check(typed).map_err(|reason| PolicyError::BadValue {
            policy: name.clone(),
            key: key.clone(),
            reason,
        })?;
        knobs.insert(key.clone(), v);
    }
    // The policy's own values become the defaults shown to sliders.
    for s in &mut specs {
        if let Some(v) = knobs.get(&s.name) {
            s.default = v.clone();
        }
    }
    let respect_floors = match kind.floors() {
        Floors::Knob(knob) => {
            if file.respect_floors.is_some() {
                return Err(PolicyError::Constraint {
                    policy: name,
                    reason: format!(
                        "for kind {kind}, respect_floors is a knob: set it under [knobs]"
                    ),
                });
            }
            matches!(knobs.get(knob), Some(KnobValue::Bool(true)))
        }
        Floors::Always => true,
        Floors::Declared => file.respect_floors.ok_or_else(|| PolicyError::Constraint {
            policy: name.clone(),
            reason: "the file must declare respect_floors = true or false".into(),
        })?,
    };
    let policy = Policy {
        name,
        kind,
        description: file.description,
        version: file.version,
        respect_floors,
        knobs,
        specs,
        overridden: Vec::new(),
        source,
    };
    knobs::check_constraints(&policy).map_err(|reason| PolicyError::Constraint {
        policy: policy.name.clone(),
        reason,
    })?;
    Ok(policy)
}

/// Split `KEY=VALUE` texts into pairs.
pub fn parse_overrides(texts: &[String]) -> Result<Vec<(String, String)>, PolicyError> {
    texts
        .iter()
        .map(|t| match t.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => Err(PolicyError::BadOverride { text: t.clone() }),
        })
        .collect()
}
