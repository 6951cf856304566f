//! Renderers of tracelens results. Renderers only format what analyses computed; they never
//! analyze and never read files.
//!
//! - [`render_text`]: the terminal summary.
//! - [`render_json`]: the versioned, stable-order JSON document ([`SCHEMA_VERSION`]).
#![deny(missing_docs)]

mod json;
mod text;

pub use json::{render_json, SCHEMA_VERSION};
pub use text::render_text;
