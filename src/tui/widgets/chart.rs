//! The strip chart under the heatmap, on the same cells: per cell the replayed tokens as a bar,
//! the budget and the policy's `demote_at` / `target` / `promote_at` lines (each in the third of
//! a row its value falls in, labelled with name and value), the recorded prompt as a dot, cache
//! breaks (divergence points) on the bottom row, the cursor as a column.
//! The scale is the budget band ([`crate::tui::presenter::chart_top`]); what is above it is drawn
//! as off the scale (`▲` a bar, `↑` a recorded prompt). A chart too short to tell the lines
//! apart from zero starts its axis just below the lowest line (the bottom label says where).
//! The second view shows cumulative cost, replayed (bars) against recorded (dots).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Widget;

use super::Viewport;
use crate::tui::theme::Theme;
use crate::tui::view_model::{ReplayModel, SessionModel};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChartKind {
    #[default]
    Pressure,
    Cost,
}

/// A value per request.
type Series<'a> = Box<dyn Fn(usize) -> f64 + 'a>;

const EIGHTHS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

pub struct StripChart<'a> {
    pub replay: &'a ReplayModel,
    pub session: &'a SessionModel,
    pub vp: Viewport,
    pub cursor: usize,
    pub theme: &'a Theme,
    pub kind: ChartKind,
    pub label_width: u16,
}

/// Compact number: 950, 12.3k, 1.2M.
pub fn short(n: f64) -> String {
    let a = n.abs();
    if a >= 1e6 {
        format!("{:.1}M", n / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", n / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

impl StripChart<'_> {
    fn bucket_max(&self, x: usize, f: impl Fn(usize) -> f64) -> Option<f64> {
        let r = self.vp.range(x);
        r.map(f)
            .fold(None, |m, v| Some(m.map_or(v, |m: f64| m.max(v))))
    }
}

/// Where a horizontal line at `v` goes in a plot `plot_h` rows high showing `0..=y_max`: the
/// row (from the top) and a glyph for the third of the row it falls in, so lines a third of a
/// row apart stay apart.
pub fn line_at(v: f64, y_max: f64, plot_h: u16) -> Option<(u16, &'static str)> {
    if !(0.0..=y_max).contains(&v) || plot_h == 0 {
        return None;
    }
    let h = v / y_max * f64::from(plot_h);
    let from_bottom = (h.floor() as u16).min(plot_h - 1);
    let frac = h - f64::from(from_bottom);
    let glyph = if frac < 1.0 / 3.0 {
        "▁"
    } else if frac < 2.0 / 3.0 {
        "─"
    } else {
        "▔"
    };
    Some((plot_h - 1 - from_bottom, glyph))
}

impl Widget for StripChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height < 3 || area.width <= self.label_width + 1 {
            return;
        }
        let t = self.theme;
        let frames = &self.replay.frames;
        let plot_h = area.height - 1; // the bottom row holds the markers
        let x0 = area.x + self.label_width;
        let (y_top, value, dot): (f64, Series, Series) = match self.kind {
            ChartKind::Pressure => (
                self.replay.y_max.max(1) as f64,
                Box::new(|i| frames.get(i).map_or(0.0, |f| f.tokens as f64)),
                Box::new(|i| {
                    self.session
                        .requests
                        .get(i)
                        .map_or(0.0, |r| r.recorded_prompt as f64)
                }),
            ),
            ChartKind::Cost => (
                self.replay.cost_max.max(1e-9),
                Box::new(|i| frames.get(i).map_or(0.0, |f| f.cum_cost)),
                Box::new(|i| frames.get(i).map_or(0.0, |f| f.recorded_cum_cost)),
            ),
        };
        // The budget and the policy's thresholds (pressure view), lowest first.
        let mut lines: Vec<(f64, Style, &str, &str)> = Vec::new();
        if self.kind == ChartKind::Pressure && self.replay.budget > 0 {
            let b = self.replay.budget as f64;
            for (k, st, name, long) in [
                (self.replay.promote_at, t.line_promote, "pro", "promote"),
                (self.replay.target, t.line_target, "tgt", "target"),
                (self.replay.demote_at, t.line_demote, "dem", "demote"),
                (Some(1.0), t.line_budget, "bud", "budget"),
            ] {
                if let Some(k) = k {
                    lines.push((k * b, st, name, long));
                }
            }
        }
        let y_lo = axis_floor(&lines, y_top, plot_h);
        let y_max = y_top - y_lo;
        // Value → height in eighths of a row.
        let eighths = |v: f64| -> u32 {
            let h = ((v - y_lo) / y_max).clamp(0.0, 1.0) * f64::from(plot_h) * 8.0;
            h.round() as u32
        };
        let row_of = |v: f64| line_at(v - y_lo, y_max, plot_h).map(|(r, _)| area.y + r);
        // Labels on the left: the top value and zero; the lines label themselves.
        let lw = usize::from(self.label_width.saturating_sub(1));
        let top = match self.kind {
            ChartKind::Pressure => format!("{} tok", short(y_top)),
            ChartKind::Cost => money_label(y_top, lw),
        };
        let top = if top.chars().count() > lw {
            top.trim_end_matches(" tok").to_owned()
        } else {
            top
        };
        buf.set_stringn(area.x, area.y, &top, lw, t.dim);
        let floor = if y_lo > 0.0 {
            format!("{}↓", short(y_lo))
        } else {
            "0".to_owned()
        };
        buf.set_stringn(area.x, area.y + plot_h - 1, floor, lw, t.dim);
        // The lines are drawn first so bars cover them; each labelled in the label column with
        // its name and value where room allows.
        let placed: Vec<(u16, Style, &str, String)> = lines
            .iter()
            .filter_map(|(v, st, name, long)| {
                let (r, glyph) = line_at(*v - y_lo, y_max, plot_h)?;
                let y = area.y + r;
                for x in x0..area.right() {
                    buf.set_string(x, y, glyph, *st);
                }
                Some((y, *st, *name, format!("{long} {}", short(*v))))
            })
            .collect();
        for (i, (y, st, name, long)) in placed.iter().enumerate() {
            if placed[..i].iter().any(|p| p.0 == *y) {
                continue; // labelled with the first line of its row
            }
            let same: Vec<&(u16, Style, &str, String)> =
                placed.iter().filter(|p| p.0 == *y).collect();
            let longs: Vec<&str> = same.iter().map(|p| p.3.as_str()).collect();
            let names: Vec<&str> = same.iter().map(|p| p.2).collect();
            // The most the label column holds: every line's name and value, their names, the
            // first name marked as sharing the row, the first name.
            let label = [
                longs.join(" / "),
                names.join("/"),
                if same.len() > 1 {
                    format!("{name}+")
                } else {
                    long.clone()
                },
                (*name).to_owned(),
            ]
            .into_iter()
            .find(|l| l.chars().count() <= lw)
            .unwrap_or_default();
            buf.set_stringn(area.x, *y, format!("{label:<lw$}"), lw, *st);
        }
        let used = self.vp.used_cells();
        let cursor_cells = self.vp.cells_of(self.cursor);
        for cx in 0..used {
            let x = x0 + cx as u16;
            if x >= area.right() {
                break;
            }
            let v = self.bucket_max(cx, &value).unwrap_or(0.0);
            let over = self.kind == ChartKind::Pressure
                && self.replay.budget > 0
                && v > self.replay.budget as f64;
            let bar_style = if over { t.gauge_over } else { t.line_tokens };
            let mut h = eighths(v);
            for r in 0..plot_h {
                let y = area.y + plot_h - 1 - r;
                if h == 0 {
                    break;
                }
                let e = h.min(8) as usize;
                h -= e as u32;
                buf.set_string(x, y, EIGHTHS[e], bar_style);
            }
            // Off the scale: the top row says so (the bar first, it is what is judged).
            if v > y_top {
                buf.set_string(x, area.y, "▲", bar_style);
            } else if let Some(d) = self.bucket_max(cx, &dot) {
                if d > y_top {
                    buf.set_string(x, area.y, "↑", t.line_recorded);
                } else if d > y_lo {
                    if let Some(y) = row_of(d) {
                        buf.set_string(x, y, "•", t.line_recorded);
                    }
                }
            }
            let broke = self
                .vp
                .range(cx)
                .any(|i| frames.get(i).is_some_and(|f| f.cache_break));
            let marker_y = area.y + plot_h;
            if broke && self.kind == ChartKind::Pressure {
                buf.set_string(x, marker_y, "↯", t.divergence);
            } else {
                buf.set_string(x, marker_y, "─", t.border);
            }
            if cursor_cells.as_ref().is_some_and(|c| c.contains(&cx)) {
                for y in area.y..area.bottom() {
                    if let Some(c) = buf.cell_mut((x, y)) {
                        let st = c.style().patch(t.cursor);
                        c.set_style(st);
                        if c.symbol() == " " {
                            c.set_symbol("│");
                        }
                    }
                }
            }
        }
        let legend = match self.kind {
            ChartKind::Pressure if lw >= 13 => "↯ cache break",
            ChartKind::Pressure => "↯",
            ChartKind::Cost => "$",
        };
        buf.set_stringn(area.x, area.y + plot_h, legend, lw, t.divergence);
    }
}

/// Where the value axis starts: at zero, unless the plot is too short to give the budget and
/// the thresholds rows of their own (then half a row's worth below the lowest of them, so each
/// line keeps a row or a third of one).
pub fn axis_floor(lines: &[(f64, Style, &str, &str)], top: f64, plot_h: u16) -> f64 {
    const ROWS_FROM_ZERO: u16 = 6;
    let lowest = lines.iter().map(|l| l.0).fold(f64::INFINITY, f64::min);
    if plot_h >= ROWS_FROM_ZERO || lines.len() < 2 || !(lowest > 0.0 && lowest < top) {
        return 0.0;
    }
    let row = (top - lowest) / f64::from(plot_h);
    (lowest - row / 2.0).max(0.0)
}

/// A dollar amount in at most `width` chars for the cost chart's top label: `$0.05`, or in
/// cents (`5¢`) or whole dollars (`$12`) when the label column is narrow.
fn money_label(v: f64, width: usize) -> String {
    [
        format!("${v:.2}"),
        if v < 1.0 {
            format!("{:.0}¢", (v * 100.0).ceil())
        } else {
            format!("${:.0}", v.ceil())
        },
    ]
    .into_iter()
    .find(|s| s.chars().count() <= width)
    .unwrap_or_else(|| short(v))
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn close_lines_fall_on_different_thirds() {
        use super::line_at;
        // Six rows up to 12k: the budget (9k) and demote_at (8.1k) share a row but not a glyph.
        let (rb, gb) = line_at(9000.0, 12_000.0, 6).unwrap_or_default();
        let (rd, gd) = line_at(8100.0, 12_000.0, 6).unwrap_or_default();
        assert_eq!(rb, rd);
        assert_ne!(gb, gd);
        assert_eq!(line_at(0.0, 1.0, 4), Some((3, "▁")));
        assert_eq!(line_at(1.0, 1.0, 4).map(|l| l.0), Some(0));
        assert!(line_at(2.0, 1.0, 4).is_none());
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(950.0), "950");
        assert_eq!(short(1234.0), "1.2k");
        assert_eq!(short(45_600.0), "46k");
        assert_eq!(short(2_500_000.0), "2.5M");
    }
}
