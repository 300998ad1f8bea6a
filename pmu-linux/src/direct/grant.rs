//! kmod-enable-user's state, as the kernel publishes it in sysfs: whether it is loaded,
//! what its parameters grant, and so why a probe trapped (kernel/params.c publishes a
//! module's parameters as `/sys/module/<name>/parameters/<param>`).

use std::fmt;
use std::path::Path;

use crate::error::{AccessError, Error};

/// Why user mode traps on this CPU although kmod-enable-user is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantMissing {
    /// arm64, loaded with programming access: perf's use of the PMU revoked the grant
    /// on this CPU. Linux 6.12 drivers/perf/arm_pmuv3.c `armv8pmu_start()` writes
    /// PMUSERENR_EL0 = 0 whenever perf starts the PMU for a task that has no
    /// user-readable events, and nothing sets it again.
    RevokedByPerf {
        /// The module has the root-only `regrant` parameter
        /// (`/sys/module/kmod_enable_user/parameters/regrant`).
        regrant: bool,
    },
    /// The module's parameters grant less than programming the counters from user
    /// mode (PMUSERENR_EL0.EN), which the direct backend needs.
    NoProgrammingAccess {
        /// The parameter as sysfs shows it (`user_access=0x4`, `el0_programming=N`).
        parameter: String,
    },
    /// Loaded, and still User mode traps on this CPU (32-bit ARM: SUNAVCR.V is 0).
    Trapped,
}

/// Where the module publishes itself once loaded.
pub const MODULE_SYSFS: &str = "/sys/module/kmod_enable_user";

/// Where kmod-enable-user publishes the counters it runs for EL0 under its read-only
/// grant (`5=0x8 31=0x11`: counter=event, 31 the cycle counter).
pub const MODULE_LAYOUT: &str = "/sys/module/kmod_enable_user/parameters/layout";

/// The error of a probe that trapped, from the module's state under `module`
/// ([`MODULE_SYSFS`]): [`AccessError::NotEnabled`] when it is not loaded,
/// [`AccessError::GrantMissing`] with what its parameters say when it is.
pub fn trapped_with_module_at(module: &Path) -> Error {
    if !module.is_dir() {
        return AccessError::NotEnabled.into();
    }
    let parameter = |name: &str| {
        std::fs::read_to_string(module.join("parameters").join(name))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    // The module's write opt-in (`el0_programming`); a module older than it had EN
    // as bit 0 of `user_access`.
    let opt_in = parameter("el0_programming");
    if let Some(value) = opt_in.as_ref().filter(|v| *v == "N" || *v == "0") {
        return missing(GrantMissing::NoProgrammingAccess {
            parameter: format!("el0_programming={value}"),
        });
    }
    if let Some(value) = parameter("user_access").filter(|_| opt_in.is_none()) {
        let bits = value.strip_prefix("0x").map_or_else(
            || value.parse::<u64>().ok(),
            |h| u64::from_str_radix(h, 16).ok(),
        );
        if bits.is_some_and(|b| b & 1 == 0) {
            return missing(GrantMissing::NoProgrammingAccess {
                parameter: format!("user_access={value}"),
            });
        }
    }
    let cause = if cfg!(target_arch = "aarch64") {
        GrantMissing::RevokedByPerf {
            regrant: module.join("parameters/regrant").exists(),
        }
    } else {
        GrantMissing::Trapped
    };
    missing(cause)
}

/// [`trapped_with_module_at`] for this system's [`MODULE_SYSFS`].
pub fn trapped() -> Error {
    trapped_with_module_at(Path::new(MODULE_SYSFS))
}

/// Whether the module publishes a layout: it is loaded with its read-only grant.
pub(crate) fn has_layout() -> bool {
    Path::new(MODULE_LAYOUT).exists()
}

/// Reads kmod-enable-user's layout ([`MODULE_LAYOUT`]): the text and its
/// parsed form.
///
/// # Errors
/// [`crate::error::AccessError::ModuleLayout`] when the file is missing (the module is not loaded, or is
/// an older one) or not understood.
pub fn module_layout() -> Result<(String, pmu_armv8::granted::GrantedLayout), Error> {
    let text = std::fs::read_to_string(MODULE_LAYOUT).map_err(|e| {
        Error::Access(AccessError::ModuleLayout {
            reason: format!("{}: {e}", MODULE_LAYOUT),
        })
    })?;
    let layout = pmu_armv8::granted::GrantedLayout::parse(&text).map_err(|e| {
        Error::Access(AccessError::ModuleLayout {
            reason: format!("{}: {e}", MODULE_LAYOUT),
        })
    })?;
    Ok((text.trim().to_owned(), layout))
}

/// The error of a read that trapped on this CPU although the module is loaded with a
/// layout: perf took the grant away here (arm64 `armv8pmu_start()`), with whether the
/// module can give it back (`regrant`).
#[cfg(target_arch = "aarch64")]
pub(crate) fn revoked_by_perf() -> Error {
    missing(GrantMissing::RevokedByPerf {
        regrant: Path::new(MODULE_SYSFS).join("parameters/regrant").exists(),
    })
}

/// [`AccessError::GrantMissing`] for `cause`.
fn missing(cause: GrantMissing) -> Error {
    AccessError::GrantMissing { cause }.into()
}

impl fmt::Display for GrantMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RevokedByPerf { regrant } => {
                f.write_str(
                    "perf's use of the PMU revoked the module's grant on this CPU (Linux's \
                     armv8pmu_start(), drivers/perf/arm_pmuv3.c, writes PMUSERENR_EL0 = 0 when \
                     perf starts the PMU for a task without user-readable events); ",
                )?;
                if *regrant {
                    f.write_str(
                        "grant it again with `echo 1 > /sys/module/kmod_enable_user/parameters/regrant` \
                         (as root: every online CPU)",
                    )?;
                } else {
                    f.write_str(
                        "grant it again by reloading the module (`rmmod kmod_enable_user`, then \
                         insmod; this version has no \
                         /sys/module/kmod_enable_user/parameters/regrant, which newer ones re-grant \
                         with `echo 1 >` as root)",
                    )?;
                }
                f.write_str(if *regrant {
                    ", or reload the module, or use the perf backend"
                } else {
                    ", or use the perf backend"
                })
            }
            Self::NoProgrammingAccess { parameter } => write!(
                f,
                "it was loaded with {parameter}, which does not let user mode program the \
                 counters ({en}), and the direct backend programs them: reload it with \
                 programming access, or use the perf backend",
                en = if cfg!(target_arch = "arm") {
                    "PMUSERENR.EN"
                } else {
                    "PMUSERENR_EL0.EN"
                }
            ),
            Self::Trapped => f.write_str(
                "user mode still traps on this CPU: reload the module, and check its kernel log",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trapped probe names what happened, from the module's sysfs directory (a fake
    /// one here: /sys/module/<name>/parameters/<param> is how the kernel publishes a
    /// module's parameters, kernel/params.c).
    #[test]
    fn trapped_probe_reads_the_module_state() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("kmod_enable_user");
        assert!(matches!(
            trapped_with_module_at(&module),
            Error::Access(AccessError::NotEnabled)
        ));
        std::fs::create_dir_all(module.join("parameters")).unwrap();
        std::fs::write(module.join("parameters/user_access"), "13\n").unwrap();
        let loaded = trapped_with_module_at(&module);
        if cfg!(target_arch = "aarch64") {
            assert!(matches!(
                loaded,
                Error::Access(AccessError::GrantMissing {
                    cause: GrantMissing::RevokedByPerf { regrant: false }
                })
            ));
            let text = loaded.to_string();
            for needle in [
                "although kmod-enable-user is loaded",
                "perf's use of the PMU revoked the module's grant on this CPU",
                "/sys/module/kmod_enable_user/parameters/regrant",
                "rmmod kmod_enable_user",
                "or use the perf backend",
            ] {
                assert!(text.contains(needle), "`{needle}` missing: {text}");
            }
            std::fs::write(module.join("parameters/regrant"), "").unwrap();
            let text = trapped_with_module_at(&module).to_string();
            assert!(
                text.contains("`echo 1 > /sys/module/kmod_enable_user/parameters/regrant`")
                    && text.contains("or reload the module, or use the perf backend"),
                "{text}"
            );
        } else {
            assert!(matches!(
                loaded,
                Error::Access(AccessError::GrantMissing {
                    cause: GrantMissing::Trapped
                })
            ));
        }
        // CR only (4): no EN, the direct backend cannot program the counters.
        std::fs::write(module.join("parameters/user_access"), "4\n").unwrap();
        let cr_only = trapped_with_module_at(&module);
        match cr_only {
            Error::Access(AccessError::GrantMissing {
                cause: GrantMissing::NoProgrammingAccess { parameter },
            }) => assert_eq!(parameter, "user_access=4"),
            other => panic!("{other:?}"),
        }
        std::fs::write(module.join("parameters/el0_programming"), "N\n").unwrap();
        assert!(trapped_with_module_at(&module)
            .to_string()
            .contains("loaded with el0_programming=N"));
    }
}
