//! The library half of pmu-qemu: the pieces its runner is built from that other tools
//! reuse. [`apt`] fetches Debian's packages through a private apt state (suites ×
//! architectures, retries, an index the mirror keeps failing left out); [`cpio`] writes
//! the newc archives Linux unpacks into its initramfs; [`profile`] turns the samples of
//! `pmu-qemu --profile` into folded stacks and flamegraphs. The runner itself is the
//! `pmu-qemu` binary (see the README).

pub mod apt;
pub mod cpio;
pub mod profile;
