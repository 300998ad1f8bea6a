//! Checks: whole-workspace commands (the fresh-machine check, the hardware check, the
//! package check, pmu-qemu's test, its CI workflow's and its comparison with Gungraun, the
//! references, the demo, pmu-linux's public surface). The top layer below main.

pub mod demo;
pub mod fresh_check;
pub mod hw_check;
pub mod package;
pub mod pmu_qemu;
pub mod pmu_qemu_compare;
pub mod pmu_qemu_workflow;
pub mod references;
pub mod surface;
pub mod workflow_yaml;
