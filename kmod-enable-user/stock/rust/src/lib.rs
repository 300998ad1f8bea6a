//! The Rust half of kmod-enable-user for stock kernels: the register logic of
//! `pmu_armv8::user_enable` (arm64), `pmu_armv6::user_enable` (ARMv6, built for
//! `armv6-none-eabi`) and `pmu_armv7::user_enable` (ARMv7 and ARMv8 in AArch32, built for
//! `armv7a-none-eabi`) behind a few `extern "C"` functions and `#[repr(C)]` structs,
//! compiled as one no_std object that Kbuild links with the C glue
//! (`../kmod_enable_user_glue.c`, declarations in `../kmod_enable_user_stock.h`).
//!
//! Why this shape: stock distribution kernels (Debian, Raspberry Pi OS) are built without
//! CONFIG_RUST, and Linux 6.12 has no Rust support for 32-bit ARM at all, so the
//! Rust-for-Linux module cannot be built there. What module loading needs (init/exit,
//! license, parameters, the CPU-hotplug state, `smp_call_function_single`, printk) is C;
//! everything that touches a PMU register is the same Rust the workspace tests on the
//! host.
//!
//! One object per flavour, one file per flavour, chosen here:
//!
//! - [`ffi`]: what every flavour's C functions share: errnos, refusals, the C strings
//!   and buffers the glue passes;
//! - `grant`: the PMUSERENR grant (`configure`, `apply`, `restore`) written once,
//!   generic over a `grant::Flavour` (built for arm64 and ARMv7, and for the tests);
//! - `arm64` and `armv7`: the two flavours of `grant`, and their `kmod_eu_*` symbols;
//! - `armv6`: SUNAVCR on the ARM1176, which has no PMUSERENR.
//!
//! The object has no runtime: no allocation, no formatting, no unwinding. The panic
//! handler calls the glue's `kmod_enable_user_rust_panic()` (which calls the kernel's
//! `panic()`); the build checks with `nm -u` that the object needs nothing else, and
//! the code is written so that no panic path survives optimization (then even that
//! symbol is absent).
//!
//! Errors are returned as negative errnos, the kernel's convention ([`ffi`]).
//!
//! `ffi` and `grant` hold no register access: `cargo test -p kmod-enable-user-stock`
//! checks them on the host, `grant` through a fake flavour.
#![cfg_attr(not(test), no_std)]

pub mod ffi;

#[cfg(any(
    test,
    target_arch = "aarch64",
    all(target_arch = "arm", target_feature = "v7")
))]
pub mod grant;

#[cfg(target_arch = "aarch64")]
pub mod arm64;

#[cfg(all(target_arch = "arm", not(target_feature = "v7")))]
pub mod armv6;

#[cfg(all(target_arch = "arm", target_feature = "v7"))]
pub mod armv7;

#[cfg(not(test))]
extern "C" {
    /// In the C glue: reports a Rust panic through the kernel's `panic()`.
    fn kmod_enable_user_rust_panic() -> !;
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: the glue's function takes no arguments and never returns (it calls
    // `panic()`); calling it from any context is what it is for.
    unsafe { kmod_enable_user_rust_panic() }
}
