//! Host set-up: what the machine running xtask needs (rustup targets and components,
//! QEMU, cross tools, Debian packages), installed idempotently. Above the engine only.

pub mod apt;
pub mod bindgen;
pub mod setup;
