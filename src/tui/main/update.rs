//! What the main screen's actions and its mouse do to its state: each takes the state, what it
//! reads of the rest ([`Env`]) and hands back what it asks of the rest ([`Out`]).

use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::{jump, speed_label, Ask, Breadcrumb, Env, MainState, Out, Pane, SPEEDS_MS};
use crate::tui::app::{Effect, InputPurpose, Level};
use crate::tui::keymap::Action;
use crate::tui::widgets::chart::ChartKind;
use tierscope_engine::episode::model::Tier;

impl MainState {
    /// What a main-screen action does.
    pub fn act(&mut self, env: &Env<'_>, a: Action, out: &mut Out) {
        let c = self.cursor;
        match a {
            Action::Quit => out.ask(Ask::Quit),
            Action::ForceQuit => out.ask(Ask::ForceQuit),
            Action::Cancel => self.cancel(env, out),
            Action::Back => self.back(out),
            Action::Help => out.ask(Ask::Help(crate::tui::keymap::Mode::Main)),
            Action::StepNext => self.move_cursor(env, c + 1, out),
            Action::StepPrev => self.move_cursor(env, c.saturating_sub(1), out),
            Action::StepNextFast => self.move_cursor(env, c + 10, out),
            Action::StepPrevFast => self.move_cursor(env, c.saturating_sub(10), out),
            Action::First => self.move_cursor(env, 0, out),
            Action::Last => self.move_cursor(env, env.requests().saturating_sub(1), out),
            Action::NextUserTurn
            | Action::PrevUserTurn
            | Action::NextChange
            | Action::PrevChange
            | Action::NextHold
            | Action::PrevHold
            | Action::NextThrash
            | Action::PrevThrash
            | Action::NextCompaction
            | Action::PrevCompaction => self.jump(env, a, out),
            Action::PlayPause => {
                self.playing = !self.playing;
                if self.playing && self.cursor + 1 >= env.requests() {
                    self.move_cursor(env, 0, out);
                }
            }
            Action::Faster | Action::Slower => {
                self.speed = if a == Action::Faster {
                    (self.speed + 1).min(SPEEDS_MS.len() - 1)
                } else {
                    self.speed.saturating_sub(1)
                };
                out.flash(
                    format!("play speed {}", speed_label(self.speed)),
                    Level::Info,
                );
            }
            Action::SelectDown => self.select_by(env, 1),
            Action::SelectUp => self.select_by(env, -1),
            Action::ScrollDown | Action::ScrollUp => {
                let down = a == Action::ScrollDown;
                let g = env.geometry;
                let signed = |by: isize| if down { by } else { -by };
                match self.focus {
                    Pane::Context => self.scroll_context(env, signed(g.context_scroll.text_step())),
                    Pane::Detail => self.scroll_detail(env, signed(g.detail_scroll.text_step())),
                    Pane::Heatmap => self.select_by(env, signed(g.heat_rows.max(1) as isize)),
                    Pane::Episodes => {
                        let rows = usize::from(g.table_body.height).max(1) as isize;
                        self.select_by(env, signed(rows));
                    }
                }
            }
            Action::FocusNext | Action::FocusPrev => {
                let by = if a == Action::FocusNext { 1 } else { -1 };
                self.focus_on(self.focus.next(by));
            }
            Action::Maximize => {
                self.maximized = !self.maximized;
                let what = if self.maximized {
                    format!("{} fills the screen (+ or Esc restores)", self.focus.name())
                } else {
                    "all panes".to_owned()
                };
                out.flash(what, Level::Info);
            }
            Action::ZoomIn | Action::ZoomOut => self.zoom(env, a == Action::ZoomIn, out),
            Action::PanLeft | Action::PanRight => self.pan(env, a == Action::PanRight),
            Action::ToggleChart => {
                self.chart = match self.chart {
                    ChartKind::Pressure => ChartKind::Cost,
                    ChartKind::Cost => ChartKind::Pressure,
                }
            }
            Action::NextTierText | Action::PrevTierText => {
                self.cycle_tier_text(env, a == Action::NextTierText)
            }
            Action::ToggleContextText => self.toggle_context_text(env),
            Action::ToggleWrap => self.toggle_wrap(env, out),
            Action::OpenKnobs => out.ask(Ask::OpenKnobs),
            Action::Open(p) => out.ask(Ask::Open(p)),
            Action::SwitchPolicy => out.ask(Ask::SwitchPolicy),
            Action::SavePolicy => out.ask(Ask::SavePolicy),
            Action::DrillIn => self.drill_in(env, out),
            Action::Search => out.ask(Ask::Input(InputPurpose::Search, self.search.query.clone())),
            Action::Goto => out.ask(Ask::Input(InputPurpose::Goto, String::new())),
            Action::SearchNext | Action::SearchPrev => {
                self.next_match(env, a == Action::SearchNext, out)
            }
            Action::Copy => self.copy_tier_text(env, out),
            Action::ToggleFollow => out.ask(Ask::ToggleFollow),
            Action::CycleTheme => out.ask(Ask::CycleTheme),
            _ => {}
        }
    }

    /// The next or previous request of a kind (user turn, tier change, hold, thrash, compaction).
    fn jump(&mut self, env: &Env<'_>, a: Action, out: &mut Out) {
        let r = env.on_screen.replay.as_deref();
        let s = env.session.map(|s| &s.model);
        let list = |v: Option<&Vec<usize>>| v.cloned().unwrap_or_default();
        let (list, what) = match a {
            Action::NextChange | Action::PrevChange => {
                (list(r.map(|r| &r.change_requests)), "change")
            }
            Action::NextHold | Action::PrevHold => (list(r.map(|r| &r.hold_requests)), "hold"),
            Action::NextThrash | Action::PrevThrash => {
                (list(r.map(|r| &r.thrash_requests)), "thrash")
            }
            Action::NextUserTurn | Action::PrevUserTurn => {
                (list(s.map(|s| &s.user_turns)), "user turn")
            }
            _ => (list(s.map(|s| &s.compactions)), "compaction"),
        };
        let forward = matches!(
            a,
            Action::NextUserTurn
                | Action::NextChange
                | Action::NextHold
                | Action::NextThrash
                | Action::NextCompaction
        );
        match jump(&list, self.cursor, forward) {
            Some(r) => self.move_cursor(env, r, out),
            None => out.flash(
                format!("no {what} {}", if forward { "ahead" } else { "before" }),
                Level::Info,
            ),
        }
    }

    /// Focuses pane `p` (the shared pane of a narrow terminal shows it when it is the context or
    /// the detail).
    pub fn focus_on(&mut self, p: Pane) {
        self.focus = p;
        if matches!(p, Pane::Context | Pane::Detail) {
            self.side = p;
        }
    }

    /// Esc on the main screen closes or cancels what is open, the innermost first: the search,
    /// the maximised pane, the sub-agent session. It never quits.
    fn cancel(&mut self, env: &Env<'_>, out: &mut Out) {
        if !self.search.query.is_empty() {
            self.clear_search(env);
            out.flash("search cleared", Level::Info);
        } else if self.maximized {
            self.maximized = false;
        } else if !self.stack.is_empty() {
            self.go_back(out);
        } else {
            out.flash("nothing to close (q quits)", Level::Info);
        }
    }

    /// Backspace: back to the parent session, or to the session picker this one was opened from.
    fn back(&mut self, out: &mut Out) {
        if !self.stack.is_empty() {
            self.go_back(out);
        } else {
            out.ask(Ask::LeaveSession);
        }
    }

    fn cycle_tier_text(&mut self, env: &Env<'_>, forward: bool) {
        let Some(s) = env.session else { return };
        let Some(ep) = s.model.episodes.get(self.selected) else {
            return;
        };
        let tiers: Vec<Tier> = ep.tiers.iter().map(|t| t.tier).collect();
        if tiers.is_empty() {
            return;
        }
        let cur = self.shown_tier(env.on_screen).unwrap_or(Tier::Full);
        let i = tiers.iter().position(|t| *t == cur).unwrap_or(0);
        let n = tiers.len();
        let j = if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        };
        self.detail.tier = Some(tiers[j]);
    }

    fn copy_tier_text(&self, env: &Env<'_>, out: &mut Out) {
        let Some(s) = env.session else { return };
        let Some(ep) = s.model.episodes.get(self.selected) else {
            return;
        };
        let Some(tier) = self.shown_tier(env.on_screen) else {
            return;
        };
        match ep.tier_text(tier) {
            Some(t) => {
                let text = t.lines.join("\n");
                let msg = format!(
                    "copied {} {} ({} lines) via OSC 52",
                    ep.id,
                    tier,
                    t.lines.len()
                );
                out.fx.push(Effect::Copy(text));
                out.flash(msg, Level::Info);
            }
            None => out.flash(format!("{} has no {tier} text", ep.id), Level::Warn),
        }
    }

    /// Enter: open the selected episode's sub-agent session; with several, the list to choose
    /// from.
    fn drill_in(&mut self, env: &Env<'_>, out: &mut Out) {
        let Some(s) = env.session else { return };
        let Some(ep) = s.model.episodes.get(self.selected) else {
            return;
        };
        match ep.children.len() {
            0 => out.flash(format!("{} spawned no sub-agent", ep.id), Level::Info),
            1 => self.open_child(env, ep.children[0].id.clone(), out),
            _ => self.children = Some(0),
        }
    }

    /// Keys of the sub-agent list.
    pub fn on_children_key(&mut self, env: &Env<'_>, action: Option<Action>, out: &mut Out) {
        let Some(sel) = self.children else {
            return;
        };
        let kids: Vec<String> = env
            .session
            .and_then(|s| s.model.episodes.get(self.selected))
            .map(|e| e.children.iter().map(|c| c.id.clone()).collect())
            .unwrap_or_default();
        match action {
            Some(Action::ListUp) => self.children = Some(sel.saturating_sub(1)),
            Some(Action::ListDown) => {
                self.children = Some((sel + 1).min(kids.len().saturating_sub(1)))
            }
            Some(Action::Accept) => {
                self.children = None;
                if let Some(id) = kids.get(sel).cloned() {
                    self.open_child(env, id, out);
                }
            }
            Some(Action::CloseOverlay) => self.children = None,
            Some(Action::ForceQuit) => out.ask(Ask::ForceQuit),
            _ => {}
        }
    }

    fn open_child(&mut self, env: &Env<'_>, child: String, out: &mut Out) {
        let Some(s) = env.session else { return };
        self.stack.push(Breadcrumb {
            session_id: s.model.id.clone(),
            title: s.model.title.clone(),
            cursor: self.cursor,
            selected: self.selected,
        });
        self.playing = false;
        out.flash(format!("opening sub-agent session {child}…"), Level::Info);
        out.fx.push(Effect::LoadSession { id: Some(child) });
    }

    fn go_back(&mut self, out: &mut Out) {
        let Some(top) = self.stack.last() else {
            return;
        };
        let id = top.session_id.clone();
        self.playing = false;
        out.fx.push(Effect::LoadSession { id: Some(id) });
    }

    /// The mouse on the main screen: a click selects (heatmap cell or label, table row) or moves
    /// the cursor (chart), and focuses the pane under it; the wheel scrolls the pane under it.
    pub fn on_mouse(&mut self, env: &Env<'_>, m: MouseEvent, out: &mut Out) {
        let g = env.geometry;
        let p = Position::new(m.column, m.row);
        let inside = |r: Rect| r.contains(p);
        let vp = self.viewport(usize::from(g.heat_cells.width), env.requests());
        let request_at = |x: u16| {
            let cell = usize::from(x.saturating_sub(g.heat_cells.x));
            let range = vp.range(cell);
            (!range.is_empty()).then_some(range.start)
        };
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if inside(g.heat_cells) || inside(g.heat_labels) {
                    // Labels and cells share their rows.
                    let row = usize::from(p.y - g.heat_labels.y);
                    let ep = self.heat.top + row;
                    if inside(g.heat_cells) {
                        if let Some(r) = request_at(p.x) {
                            self.move_cursor(env, r, out);
                        }
                    }
                    if ep < env.episodes() {
                        self.select(env, ep);
                    }
                    self.focus = Pane::Heatmap;
                } else if inside(g.table_body) {
                    let rows = self.table_rows(env.episodes());
                    let i = self.table_top + usize::from(p.y - g.table_body.y);
                    if let Some(&ep) = rows.get(i) {
                        self.select(env, ep);
                    }
                    self.focus = Pane::Episodes;
                } else if inside(g.chart) {
                    if let Some(r) = request_at(p.x) {
                        self.move_cursor(env, r, out);
                    }
                } else if inside(g.context) {
                    self.focus_on(Pane::Context);
                } else if inside(g.detail) {
                    self.focus_on(Pane::Detail);
                } else if inside(g.table) {
                    self.focus = Pane::Episodes;
                }
            }
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let by: isize = if m.kind == MouseEventKind::ScrollDown {
                    3
                } else {
                    -3
                };
                if inside(g.detail) {
                    self.scroll_detail(env, by);
                } else if inside(g.context) {
                    self.scroll_context(env, by);
                } else if inside(g.heat) && env.episodes() > g.heat_rows {
                    self.scroll_heat_rows(env, by);
                } else if inside(g.heat) || inside(g.chart) {
                    // Scrubbing: the wheel steps the cursor.
                    let to = self.cursor.saturating_add_signed(by.signum());
                    self.move_cursor(env, to, out);
                } else {
                    self.select_by(env, by.signum());
                }
            }
            _ => {}
        }
    }
}
