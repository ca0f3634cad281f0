//! The run's display on stderr: an indicatif bar when stderr is a terminal, plain lines for
//! retries and notes otherwise (so a log or a CI run still shows why a run is slow). Text from
//! the server or the trace is made inert by the report layer before it reaches the terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tierscope_engine::historian::run::{Events, Outcome};

use crate::cli::report;

pub struct Display {
    bar: Option<ProgressBar>,
}

impl Display {
    pub fn new(episodes: usize) -> Display {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b =
                ProgressBar::with_draw_target(Some(episodes as u64), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} historian [{bar:30}] {pos}/{len} episodes  {elapsed_precise}  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Display { bar }
    }

    /// A line above the bar (or on its own without one).
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| report::stderr::line(text)),
            None => report::stderr::line(text),
        }
    }

    pub fn finished(&self, o: &Outcome) {
        if let Outcome::Failed(f) = o {
            self.line(&format!("error: {}", f.error));
        }
        if let Some(b) = &self.bar {
            b.inc(1);
            if let Outcome::Done(r) = o {
                b.set_message(r.input.episode_id.clone());
            }
        }
    }

    pub fn close(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Events for Display {
    fn retrying(&self, episode: &str, why: &str, wait: Duration) {
        self.line(&format!(
            "{episode}: {why}; retrying in {:.1}s",
            wait.as_secs_f64()
        ));
    }
    fn note(&self, message: &str) {
        self.line(&format!("note: {message}"));
    }
}
