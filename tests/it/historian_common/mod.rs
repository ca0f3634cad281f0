//! Shared by the historian suites: the local mock of an OpenAI-compatible endpoint.

pub mod mock;
