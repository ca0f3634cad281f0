//! One folder per agent whose recordings tierscope reads, each behind
//! [`crate::trace::adapter::Adapter`], and the registry that lists them; beside them Magic
//! Context's `context.db` (`magic_context`), a plugin's store read alongside an OpenCode session
//! (its compartments become episodes), not an agent of its own.
//!
//! Adding an agent: a folder here with its adapter, and one line in [`ADAPTERS`].

use crate::trace::adapter::{Adapter, SessionStore};
use crate::trace::error::LoadError;

pub mod claude_code;
pub mod codex;
pub mod magic_context;
pub mod opencode;

/// Every agent tierscope reads, in the order detection breaks ties and discovery lists them.
pub static ADAPTERS: &[&dyn Adapter] =
    &[&opencode::OpenCode, &claude_code::ClaudeCode, &codex::Codex];

/// The sample session compiled into the binary (an OpenCode export of a dependency migration),
/// opened when no agent data is found.
pub fn bundled_sample() -> Result<Box<dyn SessionStore>, LoadError> {
    Ok(Box::new(opencode::store::open_bundled()?))
}
