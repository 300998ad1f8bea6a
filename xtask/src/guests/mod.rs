//! Guest runs: the kernel end-to-end runs (x86_64, arm64, the 32-bit ARM boards, Debian's
//! own kernels), each booting what the build layer made. Above the builds.

pub mod armv6;
pub mod armv7;
pub mod debian;
pub mod e2e;
pub mod modules;
pub mod raspi;
