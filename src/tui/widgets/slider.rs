//! A knob slider: `├────●──────┤` between min and max, the knob at the value.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use crate::tui::theme::Theme;

pub struct Slider<'a> {
    pub value: f64,
    pub min: f64,
    pub max: f64,
    /// Where the default sits (a faint tick), if inside the range.
    pub default: Option<f64>,
    pub theme: &'a Theme,
    pub focused: bool,
}

impl Slider<'_> {
    /// The column (0-based, within `width`) of value `v`.
    pub fn col(v: f64, min: f64, max: f64, width: u16) -> u16 {
        if width <= 1 || max <= min || !v.is_finite() {
            return 0;
        }
        let f = ((v - min) / (max - min)).clamp(0.0, 1.0);
        (f * f64::from(width - 1)).round() as u16
    }
}

impl Widget for Slider<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < 3 || area.height == 0 {
            return;
        }
        let t = self.theme;
        let w = area.width;
        let y = area.y;
        for i in 0..w {
            let g = if i == 0 {
                "├"
            } else if i == w - 1 {
                "┤"
            } else {
                "─"
            };
            buf.set_string(area.x + i, y, g, t.slider);
        }
        if let Some(d) = self.default {
            if d >= self.min && d <= self.max {
                let c = Self::col(d, self.min, self.max, w);
                buf.set_string(area.x + c, y, "┼", t.slider);
            }
        }
        let c = Self::col(self.value, self.min, self.max, w);
        let st = if self.focused {
            t.slider_knob.patch(t.selection)
        } else {
            t.slider_knob
        };
        buf.set_string(area.x + c, y, "●", st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_position_spans_the_width() {
        assert_eq!(Slider::col(0.0, 0.0, 1.0, 11), 0);
        assert_eq!(Slider::col(1.0, 0.0, 1.0, 11), 10);
        assert_eq!(Slider::col(0.5, 0.0, 1.0, 11), 5);
        assert_eq!(Slider::col(7.0, 0.0, 1.0, 11), 10);
        assert_eq!(Slider::col(f64::NAN, 0.0, 1.0, 11), 0);
    }
}
