//! The command-line side of `--follow`: streaming replay frames as JSON lines where the last line
//! for a request wins.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use anyhow::Context;

use crate::cli::report::{json, stderr};
use tierscope_engine::follow::{
    follow_path, FollowConfig, FollowEvent, FollowStatus, Follower, SessionBuilder,
};
use tierscope_engine::session::{LoadOptions, LoadedSession};

/// JSON lines of frames, one per request; a frame is written again only when it changed, so
/// the last line for a request is its current frame. A request that is gone from the source
/// (its messages deleted, a session rewound) gets a retraction line `{"request": N,
/// "retracted": true}`, so a reader that applies every line ends with the same frames as a
/// fresh replay. Each line is flushed.
pub struct FrameStream<W: Write> {
    out: W,
    last: BTreeMap<usize, String>,
}

/// The line that withdraws the frame of `request`.
pub fn retraction_line(request: usize) -> String {
    format!("{{\"request\":{request},\"retracted\":true}}")
}

impl<W: Write> FrameStream<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            last: BTreeMap::new(),
        }
    }

    /// Bring the reader to `frames` (every current frame: request index, one-line JSON):
    /// write those that differ from what was written for their request, and retract the
    /// requests that are no longer there. Returns how many lines were written.
    pub fn emit(
        &mut self,
        frames: impl IntoIterator<Item = (usize, String)>,
    ) -> std::io::Result<usize> {
        let mut n = 0;
        let mut present = std::collections::BTreeSet::new();
        for (request, line) in frames {
            present.insert(request);
            if self.last.get(&request) == Some(&line) {
                continue;
            }
            writeln!(self.out, "{line}")?;
            self.out.flush()?;
            self.last.insert(request, line);
            n += 1;
        }
        let gone: Vec<usize> = self
            .last
            .keys()
            .filter(|r| !present.contains(r))
            .copied()
            .collect();
        for request in gone {
            writeln!(self.out, "{}", retraction_line(request))?;
            self.out.flush()?;
            self.last.remove(&request);
            n += 1;
        }
        Ok(n)
    }

    /// The current line of every request written so far.
    pub fn current(&self) -> &BTreeMap<usize, String> {
        &self.last
    }
}

/// How a follow run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowEnd {
    /// Nothing new arrived for the `--follow-timeout`.
    Inactive,
    SourceGone(String),
}

/// Follow `args`' session and stream the frames `frames` computes from each state to `out`
/// until the source is gone, nothing changed for `timeout`, or the process is interrupted (every
/// line is flushed as written, so Ctrl-C loses nothing). Status goes to stderr.
pub fn stream_frames<W, F>(
    args: &LoadOptions,
    timeout: Option<Duration>,
    mut frames: F,
    out: W,
) -> anyhow::Result<FollowEnd>
where
    W: Write,
    F: FnMut(&LoadedSession) -> anyhow::Result<Vec<(usize, String)>>,
{
    let path = follow_path(args)?;
    let mut builder = SessionBuilder::new(args)?;
    let cfg = FollowConfig::new(&path, args.session.clone());
    let (follower, rx) =
        Follower::spawn_channel(cfg, move |snap| builder.build(snap)).context("--follow")?;
    let mut stream = FrameStream::new(out);
    // The timeout measures a time without change: it starts once the first state is written
    // (a long first load is not inactivity), or once loading failed.
    let mut loaded = false;
    let mut failed: Option<String> = None;
    let end = loop {
        let event = match timeout.filter(|_| loaded || failed.is_some()) {
            Some(t) => match rx.recv_timeout(t) {
                Ok(e) => e,
                Err(RecvTimeoutError::Timeout) if loaded => break FollowEnd::Inactive,
                Err(RecvTimeoutError::Timeout) => {
                    follower.stop();
                    anyhow::bail!(
                        "nothing loaded: {}; gave up after --follow-timeout {}s without a change",
                        failed.as_deref().unwrap_or("no state"),
                        t.as_secs_f64()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => anyhow::bail!("the follower stopped"),
            },
            None => match rx.recv() {
                Ok(e) => e,
                Err(_) => anyhow::bail!("the follower stopped"),
            },
        };
        match event {
            FollowEvent::Reloaded { data, .. } => {
                let f = frames(&data)?;
                stream.emit(f).context("writing frames")?;
                loaded = true;
            }
            FollowEvent::Status(FollowStatus::SourceGone(reason)) => {
                break FollowEnd::SourceGone(reason)
            }
            FollowEvent::Status(FollowStatus::Retrying(reason)) => {
                stderr::line(&format!("tierscope: {reason}"));
            }
            FollowEvent::Status(_) => {}
            FollowEvent::Error(e) => {
                stderr::line(&format!("tierscope: {e}"));
                failed = Some(e);
            }
        }
    };
    follower.stop();
    match (&end, timeout) {
        (FollowEnd::SourceGone(reason), _) => {
            stderr::line(&format!("tierscope: source gone: {reason}"))
        }
        (FollowEnd::Inactive, Some(t)) => stderr::line(&format!(
            "tierscope: following stopped: no change for {}s (--follow-timeout)",
            t.as_secs_f64()
        )),
        (FollowEnd::Inactive, None) => {}
    }
    Ok(end)
}

/// `tierscope replay --follow --format jsonl`: frames of the requests already there first, then
/// each new or changed frame as it arrives; when following ends (source gone, `--follow-timeout`)
/// the summary line of the last state, as `replay --format jsonl` ends.
pub fn replay_follow(
    a: &crate::cli::replay::ReplayArgs,
    policy: &tierscope_engine::policy::Policy,
) -> anyhow::Result<()> {
    if a.format != crate::cli::report::Format::Jsonl {
        anyhow::bail!("--follow streams JSON lines: use it with --format jsonl");
    }
    if a.records.is_some() {
        anyhow::bail!("--records is not written while following");
    }
    let timeout = match a.follow_timeout {
        None => None,
        Some(s) => follow_timeout(s)?,
    };
    let budget = a.policy.budget;
    let mut summary = None;
    let stdout = std::io::stdout();
    stream_frames(
        &a.load.options(),
        timeout,
        |s| {
            let r = tierscope_engine::replay::replay_session(s, policy, budget);
            let lines = r
                .frames
                .iter()
                .map(|f| Ok((f.request, json::to_line(f)?)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            summary = Some(json::to_line(&serde_json::json!({ "summary": r.summary }))?);
            Ok(lines)
        },
        stdout.lock(),
    )?;
    if let Some(line) = summary {
        let mut out = stdout.lock();
        match writeln!(out, "{line}").and_then(|()| out.flush()) {
            Err(e) if !crate::cli::report::stdout::is_closed_pipe(&e) => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// `--follow-timeout SECS`: a positive number of seconds; one too large for a `Duration` (1e300)
/// means no timeout, which is what it says.
pub fn follow_timeout(secs: f64) -> anyhow::Result<Option<Duration>> {
    if secs.is_nan() || secs <= 0.0 {
        anyhow::bail!("--follow-timeout must be a positive number of seconds, not {secs}");
    }
    Ok(Duration::try_from_secs_f64(secs).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_written_again_only_when_it_changed() {
        let mut buf = Vec::new();
        {
            let mut s = FrameStream::new(&mut buf);
            assert_eq!(s.emit([(0, "a".into()), (1, "b".into())]).unwrap(), 2);
            // Request 1 was still streaming; request 0 did not change; request 2 is new.
            assert_eq!(
                s.emit([(0, "a".into()), (1, "b2".into()), (2, "c".into())])
                    .unwrap(),
                2
            );
            assert_eq!(s.current().get(&1).map(String::as_str), Some("b2"));
        }
        assert_eq!(String::from_utf8(buf).unwrap(), "a\nb\nb2\nc\n");
    }

    #[test]
    fn a_request_that_is_gone_is_retracted_once() {
        let mut buf = Vec::new();
        {
            let mut s = FrameStream::new(&mut buf);
            s.emit([(0, "a".into()), (1, "b".into()), (2, "c".into())])
                .unwrap();
            // Request 2 was deleted from the database; request 1 changed.
            assert_eq!(s.emit([(0, "a".into()), (1, "b2".into())]).unwrap(), 2);
            assert_eq!(s.emit([(0, "a".into()), (1, "b2".into())]).unwrap(), 0);
            assert_eq!(s.current().len(), 2);
        }
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(text, "a\nb\nc\nb2\n{\"request\":2,\"retracted\":true}\n");
    }

    #[test]
    fn a_huge_follow_timeout_means_none_and_never_panics() {
        assert_eq!(follow_timeout(1e300).unwrap(), None);
        assert_eq!(follow_timeout(f64::INFINITY).unwrap(), None);
        assert_eq!(
            follow_timeout(2.5).unwrap(),
            Some(Duration::from_millis(2500))
        );
        assert!(follow_timeout(0.0).is_err());
        assert!(follow_timeout(-1.0).is_err());
        assert!(follow_timeout(f64::NAN).is_err());
    }
}
