//! Renderers of tracelens results. Renderers only format what analyses computed; they never
//! analyze and never read files.
//!
//! - [`render_text`]: the terminal summary (ANSI colour optional).
//! - [`render_html`]: the self-contained HTML report (askama; everything escaped, no network).
//! - [`render_markdown`]: a compact summary for CI step summaries and PR comments.
//! - [`render_json`]: the versioned, stable-order JSON document ([`SCHEMA_VERSION`]).
#![deny(missing_docs)]

mod html;
mod json;
mod markdown;
mod text;
mod timeline;
mod verdict;

pub use html::render_html;
pub use json::{render_json, SCHEMA_VERSION};
pub use markdown::render_markdown;
pub use text::render_text;
pub use verdict::verdict;
