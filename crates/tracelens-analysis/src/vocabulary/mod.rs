//! What names mean, in one place: API calls, ops and ranges, kernels, and what the host is
//! doing. Every analysis asks here; no other module keeps a list of names
//! (`tests/architecture.rs` checks it).

pub mod activity;
pub mod api;
pub mod compiled;
pub mod devices;
pub mod kernels;
pub mod libraries;
pub mod memo;
pub mod ops;
pub mod phases;
pub mod samples;
pub mod serving;
