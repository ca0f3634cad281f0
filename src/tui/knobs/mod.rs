//! The knobs feature: the knobs panel (every knob of the policy, plus the budget), the policy
//! list, saving the knobs as a policy TOML (asking before it overwrites a file), and whether
//! the knobs are unsaved. What the last edits changed is the schedule's baseline
//! ([`crate::tui::on_screen::Baseline`]).
//!
//! Its updates are methods of its state, and of [`Env`] for those that only edit the run on
//! screen (its policy and budget); they hand back an [`Out`], which [`update`] carries out.

pub mod keys;
pub mod view;

use std::collections::BTreeMap;

use crate::tui::app::{Confirm, Effect, InputPurpose, Level, State};
use crate::tui::component::{Ask, Out};
use crate::tui::keymap::Action;
use crate::tui::on_screen::OnScreen;
use tierscope_engine::output_guard::{AtomicFile, OutputError, OutputGuard};
use tierscope_engine::policy::{Floors, KnobSpec, KnobValue, Policy};

pub struct KnobsState {
    /// The panel, open with a row selected (row 0 is the budget).
    pub panel: Option<usize>,
    /// The policy list, open with a row selected.
    pub policies: Option<usize>,
    pub names: Vec<String>,
    /// One line per built-in policy, for the list.
    pub descs: Vec<String>,
    /// The policy's name and knobs as started, switched to or last saved: edits since are
    /// unsaved.
    pub saved: (String, BTreeMap<String, KnobValue>),
}

impl KnobsState {
    pub fn new(policy: &Policy) -> KnobsState {
        KnobsState {
            panel: None,
            policies: None,
            names: tierscope_engine::policy::builtin_names(),
            descs: tierscope_engine::policy::builtins()
                .map(|v| v.into_iter().map(|p| p.description).collect())
                .unwrap_or_default(),
            saved: (policy.name.clone(), policy.knobs.clone()),
        }
    }
}

/// What the knobs' updates read and change of the rest of the explorer: the run on screen
/// (its policy and budget are what the knobs edit) and whether a session is loaded (only then
/// is a replay asked for).
pub struct Env<'a> {
    pub on_screen: &'a mut OnScreen,
    pub loaded: bool,
}

impl Env<'_> {
    /// Shows `p` (the same policy with other knobs), rerunning the replay when its knobs differ.
    pub fn set_policy(&mut self, p: Policy, out: &mut Out) {
        if p.knobs == self.on_screen.policy.knobs {
            return;
        }
        self.on_screen.changing();
        self.on_screen.policy = p;
        self.rerun(out);
    }

    pub fn set_budget(&mut self, budget: Option<u64>, out: &mut Out) {
        if budget == self.on_screen.budget {
            return;
        }
        self.on_screen.changing();
        self.on_screen.budget = budget;
        self.rerun(out);
    }

    fn rerun(&mut self, out: &mut Out) {
        if self.loaded {
            self.on_screen.request(&mut out.fx);
        }
    }

    /// Sets knob `name` to `text` (validated by the policy, constraints included) and reruns the
    /// replay. Returns the refusal, if any.
    pub fn set_knob(&mut self, name: &str, text: &str, out: &mut Out) -> Result<(), String> {
        let p = self
            .on_screen
            .policy
            .clone()
            .with_overrides(&[(name.to_owned(), text.to_owned())])
            .map_err(|e| e.to_string())?;
        self.set_policy(p, out);
        Ok(())
    }

    /// The typed budget (the budget field's Enter).
    pub fn type_budget(&mut self, text: &str, out: &mut Out) -> Result<(), String> {
        let b: u64 = text
            .replace(['_', ','], "")
            .parse()
            .map_err(|_| format!("not a whole number of tokens: {text:?}"))?;
        if b == 0 {
            return Err("the budget must be above 0".to_owned());
        }
        self.set_budget(Some(b), out);
        Ok(())
    }

    /// Moves knob row `row` (0 = budget) by `steps` steps: numbers by their step, switches
    /// toggle, choices cycle.
    pub fn step_knob(&mut self, row: usize, steps: f64, out: &mut Out) {
        if row == 0 {
            let b = self.on_screen.effective_budget();
            if b == 0 {
                return;
            }
            self.set_budget(Some(stepped_budget(b, steps)), out);
            return;
        }
        let Some(spec) = self.on_screen.policy.specs.get(row - 1).cloned() else {
            return;
        };
        let cur = self.on_screen.policy.knobs.get(&spec.name);
        let Some(text) = stepped_knob(&spec, cur, steps) else {
            return;
        };
        if let Err(e) = self.set_knob(&spec.name, &text, out) {
            out.flash(e, Level::Warn);
        }
    }

    /// The policy as a file to save: the save field, holding a name of its own.
    pub fn start_save(&self, out: &mut Out) {
        let name = format!("{}-tuned.toml", self.on_screen.policy.name);
        out.ask(Ask::Input(InputPurpose::SavePath, name));
    }
}

impl KnobsState {
    /// Whether the knobs were edited since the policy was started, switched to or saved.
    pub fn unsaved(&self, on_screen: &OnScreen) -> bool {
        let p = &on_screen.policy;
        let (name, knobs) = &self.saved;
        *name != p.name || *knobs != p.knobs
    }

    /// `K`: the panel, budget row selected.
    pub fn open_panel(&mut self, env: &mut Env<'_>) {
        env.on_screen.end_edits();
        self.panel = Some(0);
    }

    /// `p`: the policy list, the current policy selected.
    pub fn open_policies(&mut self, env: &Env<'_>) {
        let current = &env.on_screen.policy.name;
        self.policies = Some(self.names.iter().position(|n| n == current).unwrap_or(0));
    }

    /// The save field's Enter: save to `text` (`.toml` added), asking first when the file
    /// exists.
    pub fn save_to(&self, env: &Env<'_>, text: &str, out: &mut Out) -> Result<(), String> {
        if text.is_empty() {
            return Err("give a file name".to_owned());
        }
        let path = if text.ends_with(".toml") {
            text.to_owned()
        } else {
            format!("{text}.toml")
        };
        out.job(Effect::SavePolicy {
            path,
            toml: policy_toml(&env.on_screen.policy),
            overwrite: false,
        });
        Ok(())
    }

    /// The worker's answer to a save.
    pub fn on_saved(&mut self, env: &Env<'_>, result: Result<String, SaveError>, out: &mut Out) {
        match result {
            Ok(path) => {
                let p = &env.on_screen.policy;
                self.saved = (p.name.clone(), p.knobs.clone());
                out.flash(format!("saved {path}"), Level::Info);
            }
            Err(SaveError::Exists { path, toml }) => {
                out.ask(Ask::Confirm(Confirm::Overwrite { path, toml }))
            }
            Err(SaveError::Failed(e)) => out.flash(format!("save failed: {e}"), Level::Error),
        }
    }

    /// Keys of the policy list.
    pub fn on_policy_key(&mut self, env: &mut Env<'_>, action: Option<Action>, out: &mut Out) {
        let Some(selected) = self.policies else {
            return;
        };
        let n = self.names.len();
        match action {
            Some(Action::ListUp) => self.policies = Some(selected.saturating_sub(1)),
            Some(Action::ListDown) => self.policies = Some((selected + 1).min(n.saturating_sub(1))),
            Some(Action::Accept) => {
                self.policies = None;
                self.panel = None;
                let Some(name) = self.names.get(selected).cloned() else {
                    return;
                };
                match tierscope_engine::policy::load(&name, &[]) {
                    Ok(p) => {
                        env.on_screen.end_edits();
                        env.on_screen.changing();
                        env.on_screen.end_edits();
                        self.saved = (p.name.clone(), p.knobs.clone());
                        env.on_screen.policy = p;
                        out.flash(format!("policy {name}"), Level::Info);
                        env.rerun(out);
                    }
                    Err(e) => out.flash(e.to_string(), Level::Error),
                }
            }
            Some(Action::CloseOverlay) => self.policies = None,
            Some(Action::ForceQuit) => out.ask(Ask::ForceQuit),
            _ => {}
        }
    }

    /// Keys of the knobs panel.
    pub fn on_panel_key(&mut self, env: &mut Env<'_>, action: Option<Action>, out: &mut Out) {
        let Some(selected) = self.panel else {
            return;
        };
        let rows = 1 + env.on_screen.policy.specs.len();
        match action {
            Some(Action::KnobUp) => self.panel = Some(selected.saturating_sub(1)),
            Some(Action::KnobDown) => self.panel = Some((selected + 1).min(rows - 1)),
            Some(
                a @ (Action::KnobInc | Action::KnobDec | Action::KnobIncBig | Action::KnobDecBig),
            ) => {
                let steps: f64 = match a {
                    Action::KnobInc => 1.0,
                    Action::KnobDec => -1.0,
                    Action::KnobIncBig => 10.0,
                    _ => -10.0,
                };
                env.step_knob(selected, steps, out);
            }
            Some(Action::KnobType) => {
                let p = &env.on_screen.policy;
                let (purpose, text) = if selected == 0 {
                    let b = env.on_screen.effective_budget();
                    (InputPurpose::Budget, b.to_string())
                } else {
                    let v = p.specs.get(selected - 1).and_then(|s| p.knobs.get(&s.name));
                    let text = v.map(|v| v.to_string()).unwrap_or_default();
                    (InputPurpose::KnobValue, text)
                };
                out.ask(Ask::Input(purpose, text));
            }
            Some(Action::KnobReset) => {
                if selected == 0 {
                    env.set_budget(None, out);
                } else if let Some(spec) = env.on_screen.policy.specs.get(selected - 1).cloned() {
                    if let Err(e) = env.set_knob(&spec.name, &spec.default.to_string(), out) {
                        out.flash(e, Level::Error);
                    }
                }
            }
            Some(Action::SavePolicy) => env.start_save(out),
            Some(Action::SwitchPolicy) => self.open_policies(env),
            Some(Action::CloseOverlay) => self.panel = None,
            Some(Action::ForceQuit) => out.ask(Ask::ForceQuit),
            _ => {}
        }
    }

    /// The typed value of the selected knob (the knob field's Enter).
    pub fn type_knob(&self, env: &mut Env<'_>, text: &str, out: &mut Out) -> Result<(), String> {
        let Some(selected) = self.panel else {
            return Ok(());
        };
        let specs = &env.on_screen.policy.specs;
        let Some(spec) = specs.get(selected.wrapping_sub(1)).cloned() else {
            return Ok(());
        };
        env.set_knob(&spec.name, text, out)
    }
}

impl State {
    /// The knobs' state and what they read and change of the rest (disjoint borrows).
    pub fn knobs_and_env(&mut self) -> (&mut KnobsState, Env<'_>) {
        let env = Env {
            on_screen: &mut self.on_screen,
            loaded: self.session.is_some(),
        };
        (&mut self.knobs, env)
    }
}

/// Runs a knobs update `f` and carries out what it hands back.
pub fn update<R>(
    state: &mut State,
    fx: &mut Vec<Effect>,
    f: impl FnOnce(&mut KnobsState, &mut Env<'_>, &mut Out) -> R,
) -> R {
    let mut out = Out::default();
    let r = {
        let (k, mut env) = state.knobs_and_env();
        f(k, &mut env, &mut out)
    };
    crate::tui::component::carry_out(state, None, out, fx);
    r
}

/// Why a save did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveError {
    /// The file exists and overwriting was not confirmed: the text to write once it is.
    Exists {
        path: String,
        toml: String,
    },
    Failed(String),
}

/// Writes a policy file: a new file, or over an existing one only when `overwrite`; complete or
/// not at all, and never over what the session was read from or into an agent's data (`guard`).
pub fn write_policy(
    path: &str,
    toml: &str,
    overwrite: bool,
    guard: &OutputGuard,
) -> Result<String, SaveError> {
    use std::io::Write;
    let failed = |e: &dyn std::error::Error| {
        let mut msg = e.to_string();
        if let Some(cause) = e.source() {
            msg.push_str(&format!(": {cause}"));
        }
        SaveError::Failed(msg)
    };
    let mut f = AtomicFile::create(std::path::Path::new(path), guard).map_err(|e| failed(&e))?;
    f.write_all(toml.as_bytes())
        .map_err(|e| SaveError::Failed(format!("{path}: {e}")))?;
    let done = if overwrite {
        f.commit()
    } else {
        f.commit_new()
    };
    match done {
        Ok(()) => Ok(path.to_owned()),
        Err(OutputError::Exists { .. }) => Err(SaveError::Exists {
            path: path.to_owned(),
            toml: toml.to_owned(),
        }),
        Err(e) => Err(failed(&e)),
    }
}

/// The current policy with its knobs as a policy TOML file that `--policy FILE` reads back.
pub fn policy_toml(p: &Policy) -> String {
    let mut out = String::new();
    out.push_str("# Saved from the tierscope explorer.\n");
    let mut root = toml::Table::new();
    root.insert(
        "name".into(),
        toml::Value::String(format!("{}-tuned", p.name)),
    );
    root.insert(
        "kind".into(),
        toml::Value::String(p.kind.as_str().to_owned()),
    );
    root.insert(
        "description".into(),
        toml::Value::String(format!("{} with knobs tuned in the explorer", p.name)),
    );
    root.insert("version".into(), toml::Value::Integer(i64::from(p.version)));
    // A kind whose floors are a knob writes them under [knobs] with the others.
    if !matches!(p.kind.floors(), Floors::Knob(_)) {
        root.insert(
            "respect_floors".into(),
            toml::Value::Boolean(p.respect_floors),
        );
    }
    let mut knobs = toml::Table::new();
    for (k, v) in &p.knobs {
        let integer = p.spec(k).is_some_and(|s| s.integer);
        let tv = match v {
            KnobValue::Num(n) if integer => toml::Value::Integer(n.round() as i64),
            KnobValue::Num(n) => toml::Value::Float(*n),
            KnobValue::Bool(b) => toml::Value::Boolean(*b),
            KnobValue::Choice(c) => toml::Value::String(c.clone()),
        };
        knobs.insert(k.clone(), tv);
    }
    root.insert("knobs".into(), toml::Value::Table(knobs));
    out.push_str(&toml::to_string(&root).unwrap_or_default());
    out
}

/// A knob value as the panel and saved files show it: integers without a fraction, others
/// with at most four decimals and no trailing zeros.
pub fn fmt_knob(v: f64, integer: bool) -> String {
    if integer {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_owned()
    }
}

/// The value a policy runs knob `spec` with: its override, else the default.
pub fn knob_value(p: &Policy, spec: &KnobSpec) -> KnobValue {
    p.knobs
        .get(&spec.name)
        .cloned()
        .unwrap_or_else(|| spec.default.clone())
}

/// The budget `steps` steps away from `b` (a step is 1 % of it, at least 1,000 tokens), never
/// under 1,000: the knobs panels of the main screen and of diff mode step it alike.
pub fn stepped_budget(b: u64, steps: f64) -> u64 {
    let step = (b as f64 * 0.01).round().max(1000.0);
    (b as f64 + steps * step).max(1000.0) as u64
}

/// The text of knob `spec` `steps` steps away from `cur` (its current value): numbers move by
/// the spec's step within its range, flags flip, choices cycle. `None` when it cannot step.
pub fn stepped_knob(spec: &KnobSpec, cur: Option<&KnobValue>, steps: f64) -> Option<String> {
    match (&spec.default, cur) {
        (KnobValue::Num(_), Some(KnobValue::Num(v))) => {
            let step = spec.step.unwrap_or(if spec.integer { 1.0 } else { 0.01 });
            let mut nv = v + steps * step;
            if let Some(lo) = spec.min {
                nv = nv.max(lo);
            }
            if let Some(hi) = spec.max {
                nv = nv.min(hi);
            }
            // Snap to the step grid so repeated steps do not accumulate float noise.
            if step > 0.0 {
                let base = spec.min.unwrap_or(0.0);
                nv = base + ((nv - base) / step).round() * step;
                nv = (nv * 1e9).round() / 1e9;
            }
            Some(fmt_knob(nv, spec.integer))
        }
        (KnobValue::Bool(_), Some(KnobValue::Bool(b))) => Some((!b).to_string()),
        (KnobValue::Choice(_), Some(KnobValue::Choice(c))) => {
            let n = spec.choices.len();
            if n == 0 {
                return None;
            }
            let i = spec.choices.iter().position(|x| x == c).unwrap_or(0);
            let j = if steps >= 0.0 {
                (i + 1) % n
            } else {
                (i + n - 1) % n
            };
            Some(spec.choices[j].clone())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_never_overwrites_unasked() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("p.toml");
        let path = path.to_string_lossy().into_owned();
        let g = OutputGuard::new();
        assert_eq!(write_policy(&path, "a", false, &g), Ok(path.clone()));
        match write_policy(&path, "b", false, &g) {
            Err(SaveError::Exists { toml, .. }) => assert_eq!(toml, "b"),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some("a"));
        assert_eq!(write_policy(&path, "b", true, &g), Ok(path.clone()));
        assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some("b"));
        // Only the policy file is there: no temporary file is left.
        assert_eq!(
            std::fs::read_dir(dir.path()).map(|d| d.count()).ok(),
            Some(1)
        );
    }

    #[test]
    fn a_save_over_an_input_is_refused_even_when_confirmed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let export = dir.path().join("M1.json");
        std::fs::write(&export, "{}").unwrap_or_else(|e| panic!("{e}"));
        let mut g = OutputGuard::new();
        g.input_file(&export, "input export");
        let path = export.to_string_lossy().into_owned();
        match write_policy(&path, "x", true, &g) {
            Err(SaveError::Failed(why)) => assert!(why.contains("input export"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read_to_string(&export).ok().as_deref(), Some("{}"));
    }
}
