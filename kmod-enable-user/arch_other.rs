// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! Any other architecture: nothing this module knows how to enable.

use super::*;

pub(crate) struct Enabled;

pub(crate) fn enable() -> Result<Enabled> {
    pr_err!("unsupported architecture (arm64 and x86_64 only): refusing to load\n");
    Err(ENODEV)
}

impl Enabled {
    pub(crate) fn disable(&mut self) {}
}
