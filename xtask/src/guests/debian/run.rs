//! `cargo xtask e2e debian-arm64`, `debian-armhf`, `debian13-arm64` and `debian13-armhf`:
//! Debian's kernels booted with the stock module, Debian's perf and pmu-demo, and their
//! steps. Every kernel is a row of one table ([`ROWS`]: a Debian release × one of its
//! kernels); a step ([`RUNS`]) takes the rows of one release and one guest architecture,
//! through that release's apt state.

use std::process::Command;

use super::initramfs::initramfs;
use super::kernels::{kernel, Image};
use super::module::{guest_module_path, stock_module};
use super::perf::perf;
use crate::build::kernel::Arch;
use crate::host::apt::Release;

/// This module's commands in `cargo xtask help`.
pub const USAGE: &str = "    e2e <debian-arm64|debian-armhf|debian13-arm64|debian13-armhf>
                      Debian's own kernels from Debian's packages (apt, one private
                      state per release, cached in the cache root), each with the
                      stock module built against its own headers and its own
                      Debian perf (linux-perf and its libraries), pmu-demo:
                      debian-arm64: Debian 12's default 6.1 and 6.12 on virt -cpu
                      max -smp 2 and once at EL2 (VHE); debian13-arm64: Debian
                      13's 6.12 and trixie-backports' 7.3 the same way: exact
                      counts, perf stat -e instructions:u = the direct read,
                      perf stat -a across insmod/hotplug/idle/rmmod without a
                      jump, direct reads after a perf_user_access session;
                      debian-armhf (Debian 12's armmp, armmp-lpae) and
                      debian13-armhf (Debian 13's armmp): virt -cpu
                      cortex-a15 with the ARMv7 flavour and the ARMv7 pmu-demo,
                      Debian's armhf perf beside them (tests/tests/debian_<arch>.rs,
                      docs/debian.md).
";

/// Runs `cargo test -p pmu-tests --test <test>` with `env` set, only the tests `names`
/// (exact names; with PMU_E2E_FILTER set, only those of them whose names contain it).
fn cargo_test(test: &str, names: &[&str], env: &[(String, String)]) -> Result<(), String> {
    for (k, v) in env {
        eprintln!("    {k}={v}");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args = vec![
        "test".to_string(),
        "-p".into(),
        crate::build::images::E2E_CRATE.into(),
        "--test".into(),
        test.into(),
        "--".into(),
        "--test-threads=2".into(),
    ];
    // PMU_E2E_FILTER: only the tests whose names contain it (cargo test's filter).
    let filter = std::env::var("PMU_E2E_FILTER").unwrap_or_default();
    let chosen: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| n.contains(filter.as_str()))
        .collect();
    if chosen.is_empty() {
        return Err(format!(
            "PMU_E2E_FILTER={filter:?} matches none of this step's tests: {}",
            names.join(", ")
        ));
    }
    args.push("--exact".into());
    args.extend(chosen.iter().map(|n| n.to_string()));
    eprintln!("    $ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(&args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(crate::engine::paths::workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the {test} end-to-end tests failed ({status})"))
    }
}

/// A guest architecture of the Debian runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guest {
    /// `qemu-system-aarch64 -M virt -cpu max`: Debian's arm64 kernels.
    Arm64,
    /// `qemu-system-arm -M virt -cpu cortex-a15`: Debian's armhf kernels.
    Armhf,
}

impl Guest {
    /// The Debian architecture (`arm64`, `armhf`).
    pub fn debian_arch(self) -> &'static str {
        match self {
            Guest::Arm64 => "arm64",
            Guest::Armhf => "armhf",
        }
    }
}

/// Which `linux-perf` goes into a row's guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfOf {
    /// The kernel's own: `linux-perf` at the kernel's version (both are built from one
    /// `linux` source upload).
    Kernel,
    /// The release's candidate: Debian 12 has only 6.1's perf, which its 6.12 kernel
    /// (from the `linux-6.12` source) runs with too; Debian 13's 6.12 perf runs beside
    /// its backports' armhf 7.2.11, whose own perf the archive does not serve.
    Release,
}

/// One row of the table: a Debian release × one of its kernels, booted by the tests
/// `tests` of `tests/tests/debian_<arch>.rs`.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The row's name in the tests' variables (`PMU_DEBIAN_<id>_KERNEL`, …).
    pub id: &'static str,
    /// The release whose apt state fetches it.
    pub release: Release,
    /// apt's default release for every package of the row (the kernel, its headers,
    /// perf and perf's libraries), as `apt-get -t` sets it: `trixie-backports` for the
    /// newest Linux Debian ships.
    pub suite: Option<&'static str>,
    /// The kernel.
    pub image: Image,
    /// The guest.
    pub guest: Guest,
    /// The kernel flavour (`arm64`, `armmp`, `armmp-lpae`).
    pub flavour: &'static str,
    /// Which perf.
    pub perf: PerfOf,
    /// What the row is, for the step's title.
    pub what: &'static str,
    /// The tests that boot it.
    pub tests: &'static [&'static str],
}

/// Every Debian kernel the suite boots.
/// On armhf, trixie-backports' `linux-image-armmp` points to 7.3.4, which its index lists
/// but deb.debian.org does not serve (404 for every armhf 7.3.4 package, and for 7.2.12,
/// on 2026-12-06 and 2026-12-07; docs/debian.md): the armhf backports row boots the
/// newest armhf kernel the archive serves, 7.2.11, with Debian 13's own perf (the
/// backports' armhf perf is 7.3.4, not served either). Once 7.3.4 downloads, the row is
/// the arm64 one's with `Guest::Armhf` and `armmp`.
pub const ROWS: &[Row] = &[
    Row {
        id: "ARM64_12_6_1",
        release: Release::Bookworm,
        suite: None,
        image: Image::Meta("linux-image-arm64"),
        guest: Guest::Arm64,
        flavour: "arm64",
        perf: PerfOf::Kernel,
        what: "Debian 12's default arm64 kernel (linux-image-arm64: 6.1)",
        tests: &[
            "debian_default_kernel_6_1",
            "debian_default_kernel_vhe",
            "debian_default_kernel_nvhe",
            "debian_thread_kernel_6_1",
        ],
    },
    Row {
        id: "ARM64_12_6_12",
        release: Release::Bookworm,
        suite: None,
        image: Image::Meta("linux-image-6.12-arm64"),
        guest: Guest::Arm64,
        flavour: "arm64",
        perf: PerfOf::Release,
        what: "Debian 12's opt-in linux-image-6.12-arm64",
        tests: &[
            "debian_kernel_6_12",
            "debian_kernel_6_12_vhe",
            "debian_thread_kernel_6_12",
        ],
    },
    Row {
        id: "ARM64_13_6_12",
        release: Release::Trixie,
        suite: None,
        image: Image::Meta("linux-image-arm64"),
        guest: Guest::Arm64,
        flavour: "arm64",
        perf: PerfOf::Kernel,
        what: "Debian 13's arm64 kernel (linux-image-arm64: 6.12)",
        tests: &["debian13_kernel_6_12", "debian13_thread_kernel_6_12"],
    },
    Row {
        id: "ARM64_13_BPO",
        release: Release::Trixie,
        suite: Some("trixie-backports"),
        image: Image::Meta("linux-image-arm64"),
        guest: Guest::Arm64,
        flavour: "arm64",
        perf: PerfOf::Kernel,
        what: "the newest Linux Debian ships, trixie-backports' linux-image-arm64 (7.3)",
        tests: &[
            "debian13_backports_kernel",
            "debian13_thread_backports_kernel",
        ],
    },
    Row {
        id: "ARMHF_12_ARMMP",
        release: Release::Bookworm,
        suite: None,
        image: Image::Meta("linux-image-armmp"),
        guest: Guest::Armhf,
        flavour: "armmp",
        perf: PerfOf::Kernel,
        what: "Debian 12's linux-image-armmp (6.1)",
        tests: &[
            "debian_armmp_kernel_on_cortex_a15",
            "debian_armmp_kernel_beside_perfs_armv7_driver",
        ],
    },
    Row {
        id: "ARMHF_12_ARMMP_LPAE",
        release: Release::Bookworm,
        suite: None,
        image: Image::Meta("linux-image-armmp-lpae"),
        guest: Guest::Armhf,
        flavour: "armmp-lpae",
        perf: PerfOf::Kernel,
        what: "Debian 12's linux-image-armmp-lpae (6.1)",
        tests: &["debian_armmp_lpae_kernel_on_cortex_a15"],
    },
    Row {
        id: "ARMHF_13_ARMMP",
        release: Release::Trixie,
        suite: None,
        image: Image::Meta("linux-image-armmp"),
        guest: Guest::Armhf,
        flavour: "armmp",
        perf: PerfOf::Kernel,
        what: "Debian 13's linux-image-armmp (6.12)",
        tests: &["debian13_armmp_kernel_on_cortex_a15"],
    },
    Row {
        id: "ARMHF_13_BPO",
        release: Release::Trixie,
        suite: None,
        image: Image::Abi("7.2.11+deb13"),
        guest: Guest::Armhf,
        flavour: "armmp",
        perf: PerfOf::Release,
        what: "the newest armhf Linux Debian serves, trixie-backports' 7.2.11 armmp",
        tests: &["debian13_backports_armmp_kernel_on_cortex_a15"],
    },
];

/// One step: the rows of a release for one guest, run by one test file.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// `cargo xtask e2e <name>`.
    pub name: &'static str,
    /// The release.
    pub release: Release,
    /// The guest.
    pub guest: Guest,
}

/// The steps: `e2e debian-arm64`, `debian-armhf` (Debian 12), `debian13-arm64`,
/// `debian13-armhf` (Debian 13; its backports' armhf kernel is 7.2.11, above).
pub const RUNS: [Run; 4] = [
    Run {
        name: "debian-arm64",
        release: Release::Bookworm,
        guest: Guest::Arm64,
    },
    Run {
        name: "debian-armhf",
        release: Release::Bookworm,
        guest: Guest::Armhf,
    },
    Run {
        name: "debian13-arm64",
        release: Release::Trixie,
        guest: Guest::Arm64,
    },
    Run {
        name: "debian13-armhf",
        release: Release::Trixie,
        guest: Guest::Armhf,
    },
];

impl Run {
    /// The rows it boots.
    pub fn rows(self) -> impl Iterator<Item = &'static Row> {
        ROWS.iter()
            .filter(move |r| r.release == self.release && r.guest == self.guest)
    }

    /// The test file (`tests/tests/debian_<arch>.rs`).
    fn test(self) -> &'static str {
        match self.guest {
            Guest::Arm64 => "debian_arm64",
            Guest::Armhf => "debian_armhf",
        }
    }

    /// The step's title.
    fn what(self) -> String {
        let rows: Vec<&str> = self.rows().map(|r| r.what).collect();
        let machine = match self.guest {
            Guest::Arm64 => "virt -cpu max",
            Guest::Armhf => "virt -cpu cortex-a15 with the ARMv7 flavour",
        };
        format!(
            "{}; on {machine}: the stock module built against each one's headers, each one's Debian perf, pmu-demo (apt, cached; tests/tests/{}.rs)",
            rows.join(", "),
            self.test()
        )
    }
}

/// The run named `name`.
pub fn run_named(name: &str) -> Option<Run> {
    RUNS.into_iter().find(|r| r.name == name)
}

/// A run: each row's kernel and headers, its module, its perf and its initramfs, then
/// its tests.
fn run(r: Run) -> Result<(), String> {
    let started = std::time::Instant::now();
    let state = crate::host::apt::debian(r.release)?;
    let arch = r.guest.debian_arch();
    // What every row's guest shares: pmu-demo (and arm64's probes), busybox.
    let mut common = Vec::new();
    let make_vars = match r.guest {
        Guest::Arm64 => {
            common.push((
                "bin/pmu-demo".to_string(),
                crate::build::initramfs::guest_copy(&crate::build::initramfs::pmu_demo(
                    Arch::Arm64,
                )?)?,
            ));
            // kvm-pmu: the minimal VMM the EL2 boot runs a KVM guest with.
            // thread-grant: the per-thread grant's checks (tests/guest/thread_grant.rs).
            for probe in ["el0-probe", "debian-block", "kvm-pmu", "thread-grant"] {
                common.push((
                    format!("bin/{probe}"),
                    crate::build::initramfs::guest_copy(&crate::build::initramfs::guest_probe(
                        Arch::Arm64,
                        probe,
                    )?)?,
                ));
            }
            // pmu-guest's `library-grant`: pmu-linux under the per-thread grant.
            common.push((
                "bin/pmu-guest".to_string(),
                crate::build::initramfs::guest_copy(&crate::build::initramfs::pmu_guest(
                    Arch::Arm64,
                )?)?,
            ));
            Arch::Arm64.make_vars()
        }
        Guest::Armhf => {
            common.push((
                "bin/pmu-demo".into(),
                crate::build::initramfs::guest_copy(&crate::build::arm32_demo::armv7()?)?,
            ));
            crate::build::stock_module::armv7_make_vars()
        }
    };
    // Debian's armel busybox (ARMv5TE, EABI soft-float) runs on an armhf system too.
    let busybox = crate::host::apt::busybox(match r.guest {
        Guest::Arm64 => "arm64",
        Guest::Armhf => "armel",
    })?;
    let mut env = Vec::new();
    let mut releases: Vec<String> = Vec::new();
    let mut tests = Vec::new();
    for row in r.rows() {
        eprintln!("    -- {}", row.what);
        let backports;
        let apt: &pmu_qemu::apt::Apt = match row.suite {
            Some(suite) => {
                backports = state.with_default_release(suite);
                &backports
            }
            None => &state,
        };
        let k = kernel(apt, row.image, arch, row.flavour)?;
        if releases.contains(&k.release) {
            return Err(format!(
                "{} ({}) is a kernel another row of {} boots already",
                k.release, row.image, r.name
            ));
        }
        releases.push(k.release.clone());
        let ko = stock_module(&k, &make_vars)?;
        let perf_version = match row.perf {
            PerfOf::Kernel => k.version.clone(),
            PerfOf::Release => apt.show(&format!("linux-perf:{arch}"))?.version,
        };
        let perf = perf(apt, arch, &perf_version)?;
        let mut files = common.clone();
        files.push((guest_module_path(&k.release), ko));
        files.extend(perf.files.iter().cloned());
        let name = format!("debian-{}", row.id.to_lowercase().replace('_', "-"));
        let script = format!("debian-{arch}");
        let initramfs = initramfs(&name, &script, &busybox, &[perf.libdir], &files)?;
        let var = |what: &str| format!("PMU_DEBIAN_{}_{what}", row.id);
        env.extend([
            (var("KERNEL"), k.image.display().to_string()),
            (var("RELEASE"), k.release.clone()),
            (var("INITRAMFS"), initramfs.display().to_string()),
            (var("PERF_VERSION"), perf.version.clone()),
        ]);
        tests.extend(row.tests.iter().copied());
    }
    drop(state);
    eprintln!(
        "    artefacts ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    cargo_test(r.test(), &tests, &env)
}

fn run_debian12_arm64() -> Result<(), String> {
    run(RUNS[0])
}

fn run_debian12_armhf() -> Result<(), String> {
    run(RUNS[1])
}

fn run_debian13_arm64() -> Result<(), String> {
    run(RUNS[2])
}

fn run_debian13_armhf() -> Result<(), String> {
    run(RUNS[3])
}

/// The step of `cargo xtask e2e <r.name>` (and of `cargo xtask test`).
pub fn step(r: Run) -> crate::engine::step::Step {
    let func = match r.name {
        "debian-arm64" => run_debian12_arm64,
        "debian-armhf" => run_debian12_armhf,
        "debian13-arm64" => run_debian13_arm64,
        _ => run_debian13_armhf,
    };
    let mut programs = vec![
        "apt-get",
        "apt-cache",
        "dpkg-deb",
        "tar",
        "readelf",
        "objdump",
        "getconf",
        "make",
        "gcc",
        "modinfo",
    ];
    match r.guest {
        Guest::Arm64 => programs.extend([
            "aarch64-linux-gnu-gcc",
            // The idle device tree (tests/src/lib.rs `arm64_idle_dtb`).
            "dtc",
            pmu_tests::QEMU_AARCH64,
        ]),
        Guest::Armhf => programs.extend(["arm-linux-gnueabi-gcc", pmu_tests::QEMU_ARM]),
    }
    programs.extend(crate::build::initramfs::PROGRAMS);
    crate::engine::step::Step::func(r.what(), func).needs_programs(&programs)
}

impl Run {
    /// The lane of `cargo xtask test`'s guest group it runs in: Debian 13's arm64 run in
    /// the arm64 lane, the others in the other one (where the lock on their private apt
    /// state is seldom waited for). Measured in a CI-like run of 0519b40 plus the
    /// helper's merge (2026-12-07): with all four in the other lane, 473 s of steps in
    /// the arm64 lane and 610 s in the other; this run is 63 s of those.
    pub fn lane(self) -> u8 {
        if self.release == Release::Trixie && self.guest == Guest::Arm64 {
            crate::engine::lanes::ARM64_LANE
        } else {
            crate::engine::lanes::OTHER_LANE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row is in exactly one run, every run has rows, and no two rows share a test
    /// or a variable name.
    #[test]
    fn every_row_runs_once() {
        for row in ROWS {
            let runs = RUNS
                .iter()
                .filter(|r| r.rows().any(|x| x.id == row.id))
                .count();
            assert_eq!(runs, 1, "{}", row.id);
        }
        for r in RUNS {
            assert!(r.rows().count() >= 1, "{}", r.name);
            assert_eq!(run_named(r.name).map(|x| x.name), Some(r.name));
        }
        let mut ids: Vec<&str> = ROWS.iter().map(|r| r.id).collect();
        let mut tests: Vec<&str> = ROWS.iter().flat_map(|r| r.tests.iter().copied()).collect();
        let (n, m) = (ids.len(), tests.len());
        ids.sort();
        ids.dedup();
        tests.sort();
        tests.dedup();
        assert_eq!((ids.len(), tests.len()), (n, m));
    }
}
