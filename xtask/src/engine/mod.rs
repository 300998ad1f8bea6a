//! The step engine: the lowest layer of xtask. It runs plans of steps (in lanes when
//! asked), locks what two runs could write at once, and knows where everything lives
//! ([`paths`]). It names nothing above it: set-up, builds, guests and checks hand it
//! their steps and needs as data.

pub mod lanes;
pub mod lock;
pub mod need;
pub mod paths;
pub mod shared_target;
pub mod stdout;
pub mod step;
