//! Followed snapshots turned into [`LoadedSession`]s: one [`Loader`] (and so one tokenizer cache)
//! kept across reloads, so unchanged text is never counted twice.

use std::path::PathBuf;

use super::Snapshot;
use crate::episode::options::TierSource;
use crate::episode::segment::Segmentation;
use crate::session::{LoadOptions, LoadSessionError, LoadedSession, Loader};
use crate::trace::adapter::{self, Env};

/// Builds a [`LoadedSession`] from each followed [`Snapshot`] through the same [`Loader`] as
/// [`crate::session::load`] (same options, sidecars, children), keeping its tokenizer cache between
/// reloads.
pub struct SessionBuilder {
    loader: Loader,
    saved: bool,
}

impl SessionBuilder {
    /// Magic Context segmentation and tiers are not followed (their rows live in another
    /// database, which is not watched).
    pub fn new(args: &LoadOptions) -> Result<Self, LoadSessionError> {
        if args.episodes == Segmentation::MagicContext
            || (args.tiers == TierSource::External && args.magic_context.is_some())
        {
            return Err(LoadSessionError::FollowMagicContext);
        }
        Ok(Self {
            loader: Loader::new(args)?,
            saved: false,
        })
    }

    pub fn build(&mut self, snap: Snapshot) -> Result<LoadedSession, String> {
        let mut l = self
            .loader
            .build(snap.trace, snap.children, snap.child_errors)
            .map_err(|e| e.to_string())?;
        // The disk cache is written once, after the first (largest) batch of new counts.
        if !self.saved {
            self.saved = true;
            self.loader.save_into(&mut l);
        }
        Ok(l)
    }
}

/// The path to follow: the options', else what a plain load would open.
pub fn follow_path(args: &LoadOptions) -> Result<PathBuf, LoadSessionError> {
    if let Some(p) = &args.path {
        return Ok(p.clone());
    }
    // Several agents' data: the first registered agent's (one source is followed at a time).
    adapter::discover(&Env::from_process())?
        .into_iter()
        .next()
        .ok_or(LoadSessionError::NothingToFollow)
}
