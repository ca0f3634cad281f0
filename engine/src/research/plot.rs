//! Figures as SVG (plotters' SVG backend): the tier heatmap with the pressure chart under it for
//! one replay, and the sweep map (two knobs, a metric as colour, the Pareto front ringed).
//!
//! Large sessions are binned so a figure stays readable and small: at most [`MAX_COLS`] request
//! columns and [`MAX_ROWS`] episode rows; a bin shows the cell of its first request and episode.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::episode::Tier;
use crate::replay::{Cell, Replay};
use crate::sweep::{format_value, Metrics, SweepResult};

pub const MAX_COLS: usize = 1200;
pub const MAX_ROWS: usize = 400;
/// Most episode labels on the replay figure's heatmap axis (more would overlap).
const MAX_LABELS: usize = 24;

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("drawing the figure: {reason}")]
    Draw { reason: String },
    #[error("{0}")]
    Input(String),
}

fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw {
        reason: e.to_string(),
    }
}

/// Tier colours: dark (faithful) to light (faded); active orange; dropped pale grey.
pub fn tier_color(t: Tier) -> RGBColor {
    match t {
        Tier::Full => RGBColor(8, 48, 107),
        Tier::Dense => RGBColor(33, 113, 181),
        Tier::Compact => RGBColor(107, 174, 214),
        Tier::Anchor => RGBColor(198, 219, 239),
        Tier::Dropped => RGBColor(235, 235, 235),
    }
}
const ACTIVE: RGBColor = RGBColor(230, 120, 20);
/// Shown at `full` from a chunk on (the head in a compaction summary, or before the view).
const TAIL_ONLY: RGBColor = RGBColor(106, 61, 154);

/// The tier heatmap (requests × episodes) above the pressure chart (tokens, budget, recorded),
/// as an SVG document (the caller writes it: see [`crate::output_guard`]).
pub fn replay_figure(r: &Replay, size: (u32, u32)) -> Result<String, PlotError> {
    let mut svg = String::new();
    draw_replay(r, &mut svg, size)?;
    Ok(svg)
}

fn draw_replay(r: &Replay, out: &mut String, size: (u32, u32)) -> Result<(), PlotError> {
    let requests = r.applied.requests;
    let episodes = r.applied.episodes;
    if requests == 0 || episodes == 0 {
        return Err(PlotError::Input(
            "the replay has no requests or no episodes to draw".into(),
        ));
    }
    let root = SVGBackend::with_string(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    let title = format!(
        "{} — {} under {} (budget {})",
        r.trace.session,
        clip(&r.trace.title, 60),
        r.policy.name,
        r.policy.budget
    );
    let root = root.titled(&title, ("sans-serif", 20)).map_err(draw_err)?;
    let (top, bottom) = root.split_vertically((size.1 as f64 * 0.58) as u32);

    let cols = requests.min(MAX_COLS);
    let rows = episodes.min(MAX_ROWS);
    let req_of = |c: usize| c * requests / cols;
    let ep_of = |e: usize| e * episodes / rows;
    let mut heat = ChartBuilder::on(&top)
        .margin(12)
        .x_label_area_size(34)
        .y_label_area_size(56)
        .caption(
            "applied tier per episode (rows) at each request (columns)",
            ("sans-serif", 15),
        )
        // Rows are centred on whole numbers so that the episode labels sit mid-row (not on the
        // boundaries between rows, which would also add a label past the last episode).
        .build_cartesian_2d(0f64..requests as f64, -0.5f64..episodes as f64 - 0.5)
        .map_err(draw_err)?;
    let ep_label = |y: &f64| {
        let r = y.round();
        if (y - r).abs() > 1e-6 || r < 0.0 || r >= episodes as f64 {
            return String::new();
        }
        format!("E{}", r as i64)
    };
    heat.configure_mesh()
        .disable_mesh()
        .x_desc("request")
        .y_desc("episode")
        .label_style(("sans-serif", 12))
        .x_label_formatter(&|x| format!("{}", *x as i64))
        .y_labels(episodes.min(MAX_LABELS) + 1)
        .y_label_formatter(&ep_label)
        .draw()
        .map_err(draw_err)?;
    let cw = requests as f64 / cols as f64;
    let rh = episodes as f64 / rows as f64;
    // One rectangle per run of equal cells along a row keeps the SVG small.
    let color_at = |c: usize, e: usize| match r.applied.get(req_of(c), ep_of(e)) {
        Cell::Tier(Tier::Full) if r.tail_only_at(req_of(c), ep_of(e)).is_some() => Some(TAIL_ONLY),
        Cell::Tier(t) => Some(tier_color(t)),
        Cell::Active => Some(ACTIVE),
        Cell::Future => None,
    };
    let mut cells = Vec::new();
    for e in 0..rows {
        let y0 = e as f64 * rh - 0.5;
        let mut c = 0;
        while c < cols {
            let here = color_at(c, e);
            let start = c;
            while c < cols && color_at(c, e) == here {
                c += 1;
            }
            if let Some(color) = here {
                let (x0, x1) = (start as f64 * cw, c as f64 * cw);
                cells.push(Rectangle::new([(x0, y0), (x1, y0 + rh)], color.filled()));
            }
        }
    }
    heat.draw_series(cells).map_err(draw_err)?;
    // Legend entries: one empty series per tier.
    for t in Tier::ALL {
        let c = tier_color(t);
        heat.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
            .map_err(draw_err)?
            .label(t.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    heat.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
        .map_err(draw_err)?
        .label("active")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], ACTIVE.filled()));
    let tails = (0..r.render_states.len()).any(|t| r.tail_only_cuts(t).next().is_some());
    if tails {
        heat.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
            .map_err(draw_err)?
            .label("full, tail only")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], TAIL_ONLY.filled()));
    }
    heat.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(draw_err)?;

    let max_tokens = r
        .frames
        .iter()
        .map(|f| f.tokens.max(f.recorded.prompt))
        .max()
        .unwrap_or(0)
        .max(r.policy.budget) as f64
        * 1.08;
    let mut pressure = ChartBuilder::on(&bottom)
        .margin(12)
        .x_label_area_size(34)
        .y_label_area_size(56)
        .caption("context size per request", ("sans-serif", 15))
        .build_cartesian_2d(0f64..requests as f64, 0f64..max_tokens.max(1.0))
        .map_err(draw_err)?;
    pressure
        .configure_mesh()
        .light_line_style(RGBColor(240, 240, 240))
        .x_desc("request")
        .y_desc("tokens")
        .label_style(("sans-serif", 12))
        .x_label_formatter(&|x| format!("{}", *x as i64))
        .y_label_formatter(&|y| short_count(*y))
        .draw()
        .map_err(draw_err)?;
    let step = (requests / (MAX_COLS * 2)).max(1);
    let recorded: Vec<(f64, f64)> = r
        .frames
        .iter()
        .step_by(step)
        .filter(|f| f.recorded.prompt > 0)
        .map(|f| (f.request as f64 + 0.5, f.recorded.prompt as f64))
        .collect();
    if !recorded.is_empty() {
        pressure
            .draw_series(LineSeries::new(
                recorded,
                RGBColor(150, 150, 150).stroke_width(1),
            ))
            .map_err(draw_err)?
            .label("recorded prompt")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], RGBColor(150, 150, 150)));
    }
    let tokens: Vec<(f64, f64)> = r
        .frames
        .iter()
        .step_by(step)
        .map(|f| (f.request as f64 + 0.5, f.tokens as f64))
        .collect();
    let blue = tier_color(Tier::Dense);
    pressure
        .draw_series(LineSeries::new(tokens, blue.stroke_width(2)))
        .map_err(draw_err)?
        .label(format!("{} tokens", r.policy.name))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], blue.stroke_width(2)));
    let b = r.policy.budget as f64;
    pressure
        .draw_series(LineSeries::new(
            vec![(0.0, b), (requests as f64, b)],
            RED.stroke_width(1),
        ))
        .map_err(draw_err)?
        .label(format!("budget {}", short_count(b)))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], RED));
    pressure
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(draw_err)?;
    root.present().map_err(draw_err)?;
    Ok(())
}

/// A metric of a sweep point, for the map's colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepMetric {
    Cost,
    Survival,
    Thrash,
    MeanTokens,
    DivergenceTokens,
    Holds,
}

impl SweepMetric {
    pub fn parse(s: &str) -> Option<SweepMetric> {
        Some(match s {
            "cost" => SweepMetric::Cost,
            "survival" | "probe_survival" => SweepMetric::Survival,
            "thrash" => SweepMetric::Thrash,
            "mean" | "mean_tokens" => SweepMetric::MeanTokens,
            "divergence" | "divergence_tokens" => SweepMetric::DivergenceTokens,
            "holds" => SweepMetric::Holds,
            _ => return None,
        })
    }
    pub fn name(&self) -> &'static str {
        match self {
            SweepMetric::Cost => "cost ($)",
            SweepMetric::Survival => "probe survival",
            SweepMetric::Thrash => "thrash",
            SweepMetric::MeanTokens => "mean tokens",
            SweepMetric::DivergenceTokens => "divergence cost (tokens)",
            SweepMetric::Holds => "holds",
        }
    }
    pub fn value(&self, m: &Metrics) -> Option<f64> {
        match self {
            SweepMetric::Cost => Some(m.cost),
            SweepMetric::Survival => m.probe_survival,
            SweepMetric::Thrash => Some(m.thrash as f64),
            SweepMetric::MeanTokens => Some(m.mean_tokens),
            SweepMetric::DivergenceTokens => Some(m.divergence_tokens as f64),
            SweepMetric::Holds => Some(m.holds as f64),
        }
    }
}

/// Viridis-like ramp from dark purple (0) to yellow (1).
fn ramp(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let t = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let f = t - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The sweep map: the first axis across, the second (if any) up; each cell coloured by the
/// metric, invalid cells grey with a cross, Pareto points ringed.
/// As an SVG document (the caller writes it).
pub fn sweep_figure(
    res: &SweepResult,
    metric: SweepMetric,
    size: (u32, u32),
) -> Result<String, PlotError> {
    let mut svg = String::new();
    draw_sweep(res, metric, &mut svg, size)?;
    Ok(svg)
}

fn draw_sweep(
    res: &SweepResult,
    metric: SweepMetric,
    out: &mut String,
    size: (u32, u32),
) -> Result<(), PlotError> {
    if res.axes.is_empty() || res.axes.len() > 2 {
        return Err(PlotError::Input(format!(
            "the sweep map needs one or two axes, the sweep has {}",
            res.axes.len()
        )));
    }
    let xa = &res.axes[0];
    let ya = res.axes.get(1);
    let (nx, ny) = (xa.len(), ya.map_or(1, |a| a.len()));
    let values: Vec<Option<f64>> = res
        .points
        .iter()
        .map(|p| p.metrics.as_ref().and_then(|m| metric.value(m)))
        .collect();
    let (lo, hi) = values
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let root = SVGBackend::with_string(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    let (main, legend) = root.split_horizontally(size.0.saturating_sub(130));
    let mut chart = ChartBuilder::on(&main)
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .caption(
            format!(
                "sweep of {} (budget {}): {} — ringed: Pareto front, grey ×: invalid knobs",
                res.policy,
                res.budget,
                metric.name()
            ),
            ("sans-serif", 18),
        )
        // Cells are centred on whole numbers so that ticks (and labels) sit mid-cell.
        .build_cartesian_2d(-0.5f64..nx as f64 - 0.5, -0.5f64..ny as f64 - 0.5)
        .map_err(draw_err)?;
    let xv = xa.values();
    let yv = ya.map(|a| a.values()).unwrap_or_default();
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(xa.key.as_str())
        .y_desc(ya.map_or("", |a| a.key.as_str()))
        .x_labels(nx.min(12) + 1)
        .y_labels(ny.min(12) + 1)
        .label_style(("sans-serif", 12))
        .x_label_formatter(&|x| label_at(*x, &xv))
        .y_label_formatter(&|y| label_at(*y, &yv))
        .draw()
        .map_err(draw_err)?;
    let span = if hi > lo { hi - lo } else { 1.0 };
    let mut cells = Vec::new();
    let mut crosses = Vec::new();
    let mut rings = Vec::new();
    let mut labels = Vec::new();
    for (i, p) in res.points.iter().enumerate() {
        let (cx, cy) = if ya.is_some() {
            (i / ny, i % ny)
        } else {
            (i, 0)
        };
        let (x0, y0) = (cx as f64 - 0.5, cy as f64 - 0.5);
        match values[i] {
            Some(v) => {
                cells.push(Rectangle::new(
                    [(x0, y0), (x0 + 1.0, y0 + 1.0)],
                    ramp((v - lo) / span).filled(),
                ));
                if nx * ny <= 400 {
                    let text = if v.abs() >= 1000.0 {
                        short_count(v)
                    } else if v.fract() == 0.0 {
                        format!("{v}")
                    } else {
                        format!("{v:.3}")
                    };
                    let color = if (v - lo) / span > 0.6 { BLACK } else { WHITE };
                    let style = ("sans-serif", 15)
                        .into_font()
                        .color(&color)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    labels.push(Text::new(text, (x0 + 0.5, y0 + 0.5), style));
                }
            }
            None => {
                cells.push(Rectangle::new(
                    [(x0, y0), (x0 + 1.0, y0 + 1.0)],
                    RGBColor(220, 220, 220).filled(),
                ));
                let (m, q) = (0.3, 0.7);
                crosses.push(PathElement::new(
                    vec![(x0 + m, y0 + m), (x0 + q, y0 + q)],
                    RGBColor(150, 150, 150),
                ));
                crosses.push(PathElement::new(
                    vec![(x0 + m, y0 + q), (x0 + q, y0 + m)],
                    RGBColor(150, 150, 150),
                ));
            }
        }
        if p.pareto {
            rings.push(Rectangle::new(
                [(x0 + 0.04, y0 + 0.04), (x0 + 0.96, y0 + 0.96)],
                RED.stroke_width(3),
            ));
        }
    }
    chart.draw_series(cells).map_err(draw_err)?;
    chart.draw_series(crosses).map_err(draw_err)?;
    chart.draw_series(rings).map_err(draw_err)?;
    chart.draw_series(labels).map_err(draw_err)?;

    // Colour bar.
    let mut bar = ChartBuilder::on(&legend)
        .margin_top(60)
        .margin_bottom(60)
        .margin_right(10)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..1.0, lo.min(hi)..(if hi > lo { hi } else { lo + 1.0 }))
        .map_err(draw_err)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .label_style(("sans-serif", 11))
        .y_label_formatter(&|v| {
            if v.abs() >= 1000.0 {
                short_count(*v)
            } else {
                format!("{v:.3}")
            }
        })
        .draw()
        .map_err(draw_err)?;
    let steps = 64;
    let top = if hi > lo { hi } else { lo + 1.0 };
    bar.draw_series((0..steps).map(|k| {
        let a = lo + (top - lo) * k as f64 / steps as f64;
        let b = lo + (top - lo) * (k + 1) as f64 / steps as f64;
        Rectangle::new(
            [(0.0, a), (1.0, b)],
            ramp(k as f64 / (steps - 1) as f64).filled(),
        )
    }))
    .map_err(draw_err)?;
    root.present().map_err(draw_err)?;
    Ok(())
}

/// The axis value at a whole-number tick, else nothing.
fn label_at(x: f64, values: &[f64]) -> String {
    let r = x.round();
    if (x - r).abs() > 1e-6 || r < 0.0 {
        return String::new();
    }
    values
        .get(r as usize)
        .map(|v| format_value(*v))
        .unwrap_or_default()
}

fn short_count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Trace text for the figure: control characters made visible first (they are not allowed in
/// XML, so a raw ESC in a title would make the whole SVG unreadable), then clipped.
fn clip(s: &str, n: usize) -> String {
    crate::text::clip_chars(&crate::text::sanitize_for_terminal(s), n)
}
