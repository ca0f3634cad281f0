//! Wrapping styled lines to a pane's width, so evidence (a chunk's text, a command a rejection
//! quotes, a line of a context diff) is read whole instead of clipped at the border.
//!
//! Greedy and deterministic: a line breaks at the last space that lets the word move down whole,
//! else inside the word (a path or a command without spaces breaks at the border). The height
//! of a line ([`height`]) is computed by the same walk as the lines ([`wrap`]), so a pane can
//! count its rows for scrolling without drawing them, and they always agree.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Byte offsets in `text` where its continuation lines start: the first line holds `first`
/// columns, the others `rest` (both at least 1).
fn breaks(text: &str, first: usize, rest: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut col, mut limit, mut start) = (0usize, first.max(1), 0usize);
    // The byte after the last space on this line, and the columns up to it.
    let mut space: Option<(usize, usize)> = None;
    for (i, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if col + w > limit && i > start {
            // Break after the last space if the word then fits on the next line, else here.
            let at = match space {
                Some((s, upto)) if s > start && col - upto + w <= rest.max(1) => (s, col - upto),
                _ => (i, 0),
            };
            out.push(at.0);
            start = at.0;
            col = at.1;
            limit = rest.max(1);
            space = None;
        }
        col += w;
        if c == ' ' {
            space = Some((i + c.len_utf8(), col));
        }
    }
    out
}

/// Rows `text` takes at `width` columns, continuation lines indented by `indent` (the first
/// line starts after `lead` columns already used).
pub fn height(text: &str, lead: usize, width: usize, indent: usize) -> usize {
    if width == 0 {
        return 1;
    }
    let (first, rest) = widths(lead, width, indent);
    1 + breaks(text, first, rest).len()
}

fn widths(lead: usize, width: usize, indent: usize) -> (usize, usize) {
    let indent = indent.min(width.saturating_sub(1));
    (width.saturating_sub(lead).max(1), width - indent)
}

/// `line` wrapped at `width` columns, continuation lines indented by `indent` spaces. At most
/// `max_rows` rows (`None`: all); a cut line ends in `…`. Styles are kept across the breaks.
pub fn wrap<'a>(
    line: Line<'a>,
    width: usize,
    indent: usize,
    max_rows: Option<usize>,
) -> Vec<Line<'a>> {
    if width == 0 {
        return vec![line];
    }
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let (first, rest) = widths(0, width, indent);
    let cuts = breaks(&text, first, rest);
    if cuts.is_empty() {
        return vec![line];
    }
    // Style runs over `text`: (end byte, style).
    let mut runs: Vec<(usize, Style)> = Vec::with_capacity(line.spans.len());
    let mut end = 0;
    for s in &line.spans {
        end += s.content.len();
        runs.push((end, s.style));
    }
    let mut bounds = vec![0];
    bounds.extend(&cuts);
    bounds.push(text.len());
    let rows = bounds.len() - 1;
    let keep = max_rows.map_or(rows, |m| m.clamp(1, rows));
    let pad = " ".repeat(indent.min(width.saturating_sub(1)));
    let mut out = Vec::with_capacity(keep);
    for r in 0..keep {
        let (a, b) = (bounds[r], bounds[r + 1]);
        let mut spans: Vec<Span<'a>> = Vec::new();
        if r > 0 && !pad.is_empty() {
            spans.push(Span::raw(pad.clone()));
        }
        let mut from = a;
        for &(run_end, style) in &runs {
            if run_end <= from {
                continue;
            }
            let to = run_end.min(b);
            if to > from {
                spans.push(Span::styled(text[from..to].to_owned(), style));
                from = to;
            }
            if from >= b {
                break;
            }
        }
        out.push(Line::from(spans).style(line.style));
    }
    if keep < rows {
        if let Some(last) = out.last_mut() {
            // Room for the ellipsis: drop the last character when the row is full.
            let used: usize = last.spans.iter().map(Span::width).sum();
            if used >= width {
                if let Some(s) = last.spans.iter_mut().rev().find(|s| !s.content.is_empty()) {
                    let mut t = s.content.to_string();
                    t.pop();
                    s.content = t.into();
                }
            }
            last.spans.push(Span::raw("…"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_move_down_whole_and_long_words_break_at_the_border() {
        let l = Line::from("killed by grep -H rust-version vendor/x");
        let w = wrap(l, 12, 0, None);
        assert_eq!(
            texts(&w),
            ["killed by ", "grep -H ", "rust-version", " vendor/x"]
        );
        assert_eq!(
            height("killed by grep -H rust-version vendor/x", 0, 12, 0),
            4
        );
        let l = Line::from("abcdefghijklmnop");
        assert_eq!(
            texts(&wrap(l, 5, 0, None)),
            ["abcde", "fghij", "klmno", "p"]
        );
    }

    #[test]
    fn heights_agree_with_the_lines_and_styles_survive() {
        let l = Line::from(vec![
            Span::styled("E0 ", Style::new().bold()),
            Span::raw("We need to move confmerge from tomlette 0.3 to 0.4.1"),
        ]);
        for width in [1, 4, 9, 17, 30, 80] {
            for indent in [0, 2] {
                let text = l.to_string();
                let w = wrap(l.clone(), width, indent, None);
                assert_eq!(w.len(), height(&text, 0, width, indent), "{width} {indent}");
                assert!(w.iter().all(|r| r.width() <= width), "{width}: {w:?}");
                // Nothing lost: the rows hold the text (indents aside).
                let back: String = w
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let s = r.to_string();
                        if i > 0 {
                            s[indent.min(width - 1)..].to_owned()
                        } else {
                            s
                        }
                    })
                    .collect();
                assert_eq!(back, text);
            }
        }
        let w = wrap(l, 9, 0, None);
        assert!(w[0].spans[0]
            .style
            .add_modifier
            .contains(ratatui::style::Modifier::BOLD));
    }

    #[test]
    fn a_capped_wrap_ends_in_an_ellipsis() {
        let l = Line::from("one two three four five six seven");
        let w = wrap(l, 10, 0, Some(2));
        assert_eq!(w.len(), 2);
        assert!(w[1].to_string().ends_with('…'), "{w:?}");
        assert!(w[1].width() <= 10);
    }
}
