//! `tierscope policies [--json]`: the built-in policies, one line each, with every knob as
//! `{name, default, min, max, step, help}` (what the explorer's sliders and the sweep read).

use clap::Args;
use serde::Serialize;

use super::report::{self, Format, Text};
use tierscope_engine::policy::{self, KnobSpec, Policy};

#[derive(Debug, Clone, Args)]
pub struct PoliciesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also list this policy file (TOML) after the built-ins.
    #[arg(long, value_name = "FILE")]
    pub file: Vec<String>,
}

/// One policy in the listing.
#[derive(Debug, Serialize)]
pub struct PolicyListing {
    pub name: String,
    pub kind: String,
    pub description: String,
    pub version: u32,
    pub respect_floors: bool,
    pub knobs: Vec<KnobSpec>,
}

fn listing(p: &Policy) -> PolicyListing {
    PolicyListing {
        name: p.name.clone(),
        kind: p.kind.as_str().to_owned(),
        description: p.description.clone(),
        version: p.version,
        respect_floors: p.respect_floors,
        knobs: p.specs.clone(),
    }
}

/// The listing as text: one line per policy, then its knobs indented.
pub fn table(ps: &[Policy]) -> Text {
    let mut out = Text::new();
    for p in ps {
        out.line(format!(
            "{:<13} {:<12} floors:{:<5} {}",
            p.name,
            p.kind.as_str(),
            if p.respect_floors { "yes" } else { "no" },
            p.description
        ));
        for k in &p.specs {
            let range = match (k.min, k.max) {
                (Some(lo), Some(hi)) => format!("[{lo}..{hi} step {}]", k.step.unwrap_or(0.0)),
                _ if !k.choices.is_empty() => format!("[{}]", k.choices.join("|")),
                _ => "[true|false]".to_owned(),
            };
            out.line(format!(
                "    {:<26} {:<10} {:<26} {}",
                k.name,
                k.default.to_string(),
                range,
                k.help
            ));
        }
    }
    out
}

/// The output of `policies`: the listings (JSON) or their text.
pub struct PoliciesReport(pub Vec<Policy>);

impl report::Report for PoliciesReport {
    fn name(&self) -> &'static str {
        "policies"
    }
    fn document(&self) -> impl Serialize + '_ {
        self.0.iter().map(listing).collect::<Vec<PolicyListing>>()
    }
    fn text(&self) -> Text {
        table(&self.0)
    }
}

pub fn run(a: &PoliciesArgs) -> anyhow::Result<()> {
    let mut ps = policy::builtins()?;
    for f in &a.file {
        ps.push(policy::load(f, &[])?);
    }
    report::emit(Format::json_if(a.json), &PoliciesReport(ps))
}
