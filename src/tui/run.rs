//! The runner: owns the terminal, an input thread and the worker thread; feeds `Msg`s to
//! [`update`], executes its effects, and redraws only when something changed. It blocks on the
//! channel (no timeout) unless playing or waiting for a job, so an idle explorer uses no CPU.

use std::io::{self, Stdout, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event, KeyCode, KeyEventKind, KeyModifiers, MouseEventKind,
};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;

use crate::tui::app::{update, Effect, Msg, State};
use crate::tui::jobs::{JobQueue, Worker};
use crate::tui::ui;
use tierscope_engine::session::LoadOptions;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("terminal: {0}")]
    Terminal(#[from] io::Error),
    #[error("the explorer needs an interactive terminal (stdout is not a tty); try a subcommand such as `tierscope replay`")]
    NotATty,
}

/// Terminal modes we turn on, so that restore (normal exit, error or panic) turns off exactly
/// those.
#[derive(Debug, Clone, Copy)]
struct Modes {
    mouse: bool,
}

/// Whether the terminal is in the explorer's modes. Restoring twice would be harmful: leaving
/// the alternate screen again restores the saved cursor position again, so output printed in
/// between (a panic message) would be overwritten. The panic hook restores, and the guard's drop
/// during unwinding must then do nothing.
static TERMINAL_ACTIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn restore(modes: Modes) {
    if !TERMINAL_ACTIVE.swap(false, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    leave_modes(modes);
}

/// Turns the explorer's modes off, best effort, in reverse order of [`enter_modes`]; each step
/// is independent.
fn leave_modes(modes: Modes) {
    let mut out = io::stdout();
    if modes.mouse {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(out, DisableBracketedPaste);
    let _ = execute!(out, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Turns the explorer's modes on: raw, alternate screen, hidden cursor, bracketed paste (a
/// paste arrives as one event, not as thousands of keys), mouse capture if asked.
fn enter_modes(modes: Modes) -> io::Result<()> {
    enable_raw_mode()?;
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        cursor::Hide,
        EnableBracketedPaste
    )?;
    if modes.mouse {
        execute!(out, EnableMouseCapture)?;
    }
    Ok(())
}

/// Set when the screen must be redrawn whole (after a resume the terminal shows the shell's
/// screen, which ratatui's diffing knows nothing about).
static NEEDS_CLEAR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The UI loop's channel, so a resume can wake the loop to redraw.
static WAKE: std::sync::Mutex<Option<mpsc::Sender<Msg>>> = std::sync::Mutex::new(None);

/// Job control (SIGTSTP from `kill -TSTP` or Ctrl-Z), as `less` and `vim` do it: give the
/// terminal back to the shell as it was, stop, and once continued (`fg`) take the terminal
/// again and redraw everything.
#[cfg(unix)]
fn suspend(modes: Modes) {
    use std::sync::atomic::Ordering;
    let _output = OUTPUT.lock().unwrap_or_else(|e| e.into_inner());
    let active = TERMINAL_ACTIVE.swap(false, Ordering::SeqCst);
    if active {
        leave_modes(modes);
    }
    // Stops the process here (SIGSTOP, since SIGTSTP has our handler); returns on SIGCONT.
    let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTSTP);
    if !active {
        return;
    }
    TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
    // A failure leaves the terminal as the shell had it; the next frame still draws.
    let _ = enter_modes(modes);
    NEEDS_CLEAR.store(true, Ordering::SeqCst);
    let size = ratatui::crossterm::terminal::size();
    if let (Ok(wake), Ok((w, h))) = (WAKE.lock(), size) {
        if let Some(tx) = wake.as_ref() {
            let _ = tx.send(Msg::Resize(w, h));
        }
    }
}

/// Ctrl-Z: in raw mode it is a key, not a signal, so the explorer sends itself the signal the
/// terminal would have sent; but only under job control: without a shell to `fg` it, a stopped
/// explorer could never be continued.
#[cfg(unix)]
fn suspend_self() {
    if under_job_control() {
        let _ = signal_hook::low_level::raise(signal_hook::consts::SIGTSTP);
    }
}

/// A job-control shell runs each job in a process group of its own; a plain `sh -c` or a
/// script leaves its children in its own group.
#[cfg(unix)]
fn under_job_control() -> bool {
    // SAFETY: getpgrp and getpgid only read the process table.
    let (mine, parents) = unsafe { (libc::getpgrp(), libc::getpgid(libc::getppid())) };
    parents >= 0 && mine != parents
}

#[cfg(not(unix))]
fn suspend_self() {}

/// Restores the terminal before the previous panic hook prints, so the message is readable and
/// the shell is usable (bottom / yazi style: chain, don't replace).
fn install_panic_hook(modes: Modes) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // A panic in a job is caught on the worker thread and shown in the UI as an error;
        // restoring the terminal here would wreck a UI that keeps running.
        if std::thread::current().name() == Some(WORKER_THREAD) {
            if let Ok(mut slot) = WORKER_PANIC.lock() {
                *slot = Some(info.to_string());
            }
            return;
        }
        restore(modes);
        previous(info);
    }));
}

const WORKER_THREAD: &str = "tierscope-worker";

/// The message of the last panic on the worker thread.
static WORKER_PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The message a job that panicked answers with, so the UI shows an error instead of waiting.
fn panicked(job: &Effect) -> Option<Msg> {
    let what = WORKER_PANIC
        .lock()
        .ok()
        .and_then(|mut s| s.take())
        .unwrap_or_else(|| "unknown panic".to_owned());
    let e = format!(
        "internal error (please report): {}",
        crate::tui::safe_line(&what)
    );
    Some(match job {
        Effect::Replay { gen, .. } => Msg::Replayed {
            gen: *gen,
            result: Err(e),
        },
        Effect::Context { gen, at } => Msg::Context {
            gen: *gen,
            at: *at,
            result: Err(e),
        },
        Effect::LoadSession { .. } => Msg::Loaded(Err(e)),
        Effect::SavePolicy { .. } => Msg::Saved(Err(crate::tui::knobs::SaveError::Failed(e))),
        Effect::ListSessions => Msg::Failed(e),
        Effect::Panel(j) => j.failed(e),
        Effect::Copy(_) | Effect::Follow(_) => return None,
    })
}

/// Held while a frame is written and while a signal restores the terminal, so the restore
/// never lands in the middle of an escape sequence of a frame.
static OUTPUT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// SIGTERM, SIGINT, SIGHUP and SIGQUIT (`kill`, a closed terminal window, `kill -INT`: in raw
/// mode Ctrl-C is a key, not a signal) restore the terminal, then end the process with the
/// conventional status 128 + the signal's number; SIGTSTP suspends (see [`suspend`]). A thread
/// waits for them, so nothing runs in a signal handler; it takes [`OUTPUT`] first, so a frame
/// being drawn is finished.
#[cfg(unix)]
fn install_signal_restore(modes: Modes) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP};
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    INSTALLED.call_once(|| {
        result = (|| {
            let mut signals =
                signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGTSTP])?;
            std::thread::Builder::new()
                .name("tierscope-signals".into())
                .spawn(move || {
                    for sig in signals.forever() {
                        if sig == SIGTSTP {
                            suspend(modes);
                            continue;
                        }
                        let _lock = OUTPUT.lock();
                        restore(modes);
                        std::process::exit(128 + sig);
                    }
                })?;
            Ok(())
        })();
    });
    result
}

#[cfg(not(unix))]
fn install_signal_restore(_modes: Modes) -> io::Result<()> {
    Ok(())
}

/// The terminal in the explorer's modes (raw, alternate screen, hidden cursor, bracketed paste,
/// mouse capture if asked) with a panic hook and signal handlers that restore them (before the
/// panic message prints; before the process ends on SIGTERM, SIGINT, SIGHUP, SIGQUIT; while
/// stopped by SIGTSTP). Dropping it restores them too.
pub struct TerminalGuard(Modes);

impl TerminalGuard {
    pub fn enter(mouse: bool) -> io::Result<TerminalGuard> {
        let modes = Modes { mouse };
        install_panic_hook(modes);
        install_signal_restore(modes)?;
        TERMINAL_ACTIVE.store(true, std::sync::atomic::Ordering::SeqCst);
        // The guard first, so a failure part way restores what was turned on.
        let guard = TerminalGuard(modes);
        enter_modes(modes)?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore(self.0);
    }
}

pub struct RunOptions {
    pub load: LoadOptions,
    pub mouse: bool,
    /// Effects to start with (list sessions for the picker, or load one session).
    pub initial: Vec<Effect>,
}

/// Runs the explorer until the user quits.
pub fn run(mut state: State, opts: RunOptions) -> Result<(), RunError> {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() {
        return Err(RunError::NotATty);
    }
    let guard = TerminalGuard::enter(opts.mouse)?;
    if crate::tui::theme::no_color() {
        // crossterm 0.29 honours NO_COLOR by emitting a bare reset that also wipes BOLD and
        // REVERSED. NO_COLOR already chose the mono theme (no colours at all) unless `--theme`
        // asked for colours explicitly, so forcing colour output on keeps the attributes, and
        // with them the selection, visible (tui-anchors §1.4).
        ratatui::crossterm::style::force_color_output(true);
    }
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    terminal.clear()?;
    let result = event_loop(&mut terminal, &mut state, opts);
    drop(terminal);
    drop(guard);
    result
}

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    state: &mut State,
    opts: RunOptions,
) -> Result<(), RunError> {
    let (tx, rx) = mpsc::channel::<Msg>();
    if let Ok(mut wake) = WAKE.lock() {
        *wake = Some(tx.clone());
    }
    // Input thread: blocks in `event::read`, forwards what the UI cares about.
    {
        let tx = tx.clone();
        std::thread::Builder::new()
            .name("tierscope-input".into())
            .spawn(move || loop {
                let msg = match event::read() {
                    Ok(Event::Key(k))
                        if k.code == KeyCode::Char('z')
                            && k.modifiers.contains(KeyModifiers::CONTROL)
                            && k.kind != KeyEventKind::Release =>
                    {
                        suspend_self();
                        continue;
                    }
                    Ok(Event::Key(k)) => Msg::Key(k),
                    Ok(Event::Paste(text)) => Msg::Paste(text),
                    // Motion reports would wake the loop on every mouse move; nothing uses them.
                    Ok(Event::Mouse(m))
                        if matches!(m.kind, MouseEventKind::Moved | MouseEventKind::Drag(_)) =>
                    {
                        continue
                    }
                    Ok(Event::Mouse(m)) => Msg::Mouse(m),
                    Ok(Event::Resize(w, h)) => Msg::Resize(w, h),
                    Ok(_) => continue,
                    Err(_) => break,
                };
                if tx.send(msg).is_err() {
                    break;
                }
            })?;
    }
    // Worker thread: one job at a time, latest wins per key.
    let queue = Arc::new(JobQueue::default());
    {
        let queue = queue.clone();
        let tx = tx.clone();
        let mut worker = Worker::new(opts.load.clone());
        let follow_tx = tx.clone();
        worker.enable_follow(Arc::new(move |m| {
            let _ = follow_tx.send(Msg::Follow(m));
        }));
        std::thread::Builder::new()
            .name(WORKER_THREAD.into())
            .spawn(move || {
                while let Some(job) = queue.pop() {
                    let progress = |m: Msg| {
                        let _ = tx.send(m);
                    };
                    let copy = job.clone();
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        worker.run(job, &progress)
                    }));
                    let msg = match out {
                        Ok(m) => m,
                        Err(_) => panicked(&copy),
                    };
                    if let Some(m) = msg {
                        if tx.send(m).is_err() {
                            break;
                        }
                    }
                }
            })?;
    }
    let size = terminal.size()?;
    state.width = size.width;
    state.height = size.height;
    for e in opts.initial {
        dispatch(e, &queue)?;
    }
    let mut next_tick: Option<Instant> = None;
    // Every pass draws once: after the first frame, a pass only starts when a message arrived
    // (the loop blocks otherwise), so this is "redraw only when something changed".
    // Redraws in a row for a new geometry; bounded, should a frame and its geometry disagree.
    let mut settling = 0;
    let result = loop {
        let mut geometry = None;
        {
            // A signal restoring the terminal waits for the frame (see `OUTPUT`).
            let _frame = OUTPUT.lock().unwrap_or_else(|e| e.into_inner());
            if NEEDS_CLEAR.swap(false, std::sync::atomic::Ordering::SeqCst) {
                // `resize` clears the screen and forgets the last frame, so all of it is drawn
                // again (`clear` would ask the terminal for the cursor position, whose answer
                // the input thread's read would take).
                let area = terminal.size()?.into();
                terminal.resize(area)?;
            }
            terminal.draw(|f| geometry = Some(ui::view(state, f)))?;
        }
        // The view reports what `update` needs of the frame (page sizes, where the panes are);
        // a change may move a scroll, so the frame is drawn again at once.
        if let Some(g) = geometry.filter(|g| *g != state.geometry && settling < 3) {
            settling += 1;
            handle(state, Msg::Geometry(g), &queue)?;
            continue;
        }
        settling = 0;
        if state.quit {
            break Ok(());
        }
        let msg = match state.tick_interval_ms() {
            None => {
                next_tick = None;
                match rx.recv() {
                    Ok(m) => m,
                    Err(_) => break Ok(()),
                }
            }
            Some(ms) => {
                let interval = Duration::from_millis(ms);
                let due = *next_tick.get_or_insert_with(|| Instant::now() + interval);
                let wait = due.saturating_duration_since(Instant::now());
                match rx.recv_timeout(wait) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => {
                        next_tick = Some(Instant::now() + interval);
                        Msg::Tick
                    }
                    Err(RecvTimeoutError::Disconnected) => break Ok(()),
                }
            }
        };
        handle(state, msg, &queue)?;
        // Drain whatever else is waiting, then draw once (yazi: render after the batch).
        while let Ok(m) = rx.try_recv() {
            handle(state, m, &queue)?;
        }
    };
    queue.close();
    if let Ok(mut wake) = WAKE.lock() {
        *wake = None;
    }
    result
}

fn handle(state: &mut State, msg: Msg, queue: &JobQueue) -> Result<(), RunError> {
    for e in update(state, msg) {
        dispatch(e, queue)?;
    }
    Ok(())
}

fn dispatch(e: Effect, queue: &JobQueue) -> Result<(), RunError> {
    match e {
        Effect::Copy(text) => copy_osc52(&text)?,
        other => queue.push(other),
    }
    Ok(())
}

/// Copies `text` to the clipboard with OSC 52 (works over SSH and inside tmux with
/// `set-clipboard on`). The text is base64, so nothing in it reaches the terminal raw.
fn copy_osc52(text: &str) -> io::Result<()> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    // Like a frame: a signal's restore must not land inside the sequence.
    let _output = OUTPUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = io::stdout();
    write!(out, "\x1b]52;c;{b64}\x07")?;
    out.flush()
}
