//! tierscope's front ends: the command line ([`cli`], one reporter per output format) and the
//! explorer ([`tui`], an Elm-style loop). Every number they show comes from
//! [`tierscope_engine`], which knows nothing of them.

pub mod cli;
pub mod tui;
