//! Where this library has no direct backend: x86, whose counters are programmed with
//! WRMSR at ring 0 (perf gives rdpmc there), and every other architecture.

use crate::backend::{Backend, Opened, Request};
use crate::error::{DirectUnsupported, Error, Result};

/// No read-only grant to try.
pub(super) const READ_ONLY_GRANT: bool = false;

/// Why there is no direct backend here.
fn unsupported() -> Error {
    Error::Unsupported(crate::error::Unsupported::Direct {
        reason: if cfg!(target_arch = "x86_64") {
            DirectUnsupported::X86NeedsRing0
        } else {
            DirectUnsupported::Architecture
        },
    })
}

/// [`crate::error::Unsupported::Direct`]: user mode cannot program this PMU.
///
/// # Errors
/// Always.
pub(super) fn probe() -> Result<()> {
    Err(unsupported())
}

/// No grant to find: [`crate::error::Unsupported::Direct`] (see [`super::grants`]).
pub(super) fn grants(_cpu: usize) -> crate::backend::GrantCheck {
    crate::backend::GrantCheck::Unsupported(unsupported())
}

/// [`crate::error::Unsupported::Direct`]: as [`probe`] says.
pub(super) fn open(_: &Request) -> Result<Opened<Box<dyn Backend>>> {
    Err(unsupported())
}

/// As [`open`].
pub(super) fn open_read_only_grant(request: &Request) -> Result<Opened<Box<dyn Backend>>> {
    open(request)
}
