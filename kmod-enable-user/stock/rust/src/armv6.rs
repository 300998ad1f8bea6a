//! ARMv6 (ARM1176): SUNAVCR.V through `pmu_armv6::user_enable`. No PMUSERENR and no
//! events to check: four small functions over [`crate::ffi`]'s errnos.

use pmu_armv6::user_enable::{self, Granted};
use pmu_armv6::PrivilegedCp15;

use crate::ffi::{EINVAL, EIO};

/// SUNAVCR before and after, shared with C as `struct kmod_eu_armv6`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KmodEuArmv6 {
    /// SUNAVCR before the load.
    pub previous: u32,
    /// What was written: `previous` with V set.
    pub written: u32,
    /// SUNAVCR read back right after the write.
    pub read_back: u32,
    /// SUNAVCR found at unload, before writing `previous` back.
    pub found: u32,
}

// The C declaration has the same size (checked there with _Static_assert too).
const _: () = assert!(core::mem::size_of::<KmodEuArmv6>() == 16);

/// Whether MIDR `midr` names an ARM1176 (part 0xB76), the only core with SUNAVCR.
#[no_mangle]
pub extern "C" fn kmod_eu_armv6_is_arm1176(midr: u32) -> bool {
    user_enable::is_arm1176(midr)
}

/// The primary part number of MIDR `midr` (bits 15:4), for the refusal message.
#[no_mangle]
pub extern "C" fn kmod_eu_armv6_part_number(midr: u32) -> u32 {
    user_enable::part_number(midr)
}

/// Sets SUNAVCR.V and reads it back. 0 when it stuck; `-EIO` when it did not (then
/// SUNAVCR holds `st.previous` again and `st.read_back` says what was read).
///
/// # Safety
///
/// `st` is valid for writes (or null: `-EINVAL`); the CPU is an ARM1176
/// ([`kmod_eu_armv6_is_arm1176`]), the code runs in a privileged mode on one CPU
/// (preemption off), and the caller has decided that User mode may use the PMU.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv6_enable(st: *mut KmodEuArmv6) -> i32 {
    // SAFETY: valid or null, by the caller's contract.
    let Some(st) = (unsafe { st.as_mut() }) else {
        return -EINVAL;
    };
    // SAFETY: ARM1176, privileged, one CPU, decision taken: the caller's contract is
    // `PrivilegedCp15::new`'s.
    let regs = unsafe { PrivilegedCp15::new() };
    match user_enable::enable(&regs) {
        Ok(granted) => {
            st.previous = granted.previous;
            st.written = granted.previous | 1;
            st.read_back = granted.now;
            0
        }
        Err(refused) => {
            st.previous = refused.previous;
            st.written = refused.written;
            st.read_back = refused.read_back;
            -EIO
        }
    }
}

/// Writes SUNAVCR back to `st.previous`; sets `st.found` to what it held before.
///
/// # Safety
///
/// `st` is valid for reads and writes (or null: nothing happens) and was filled by a
/// successful [`kmod_eu_armv6_enable`]; same CPU conditions as there.
#[no_mangle]
pub unsafe extern "C" fn kmod_eu_armv6_disable(st: *mut KmodEuArmv6) {
    // SAFETY: valid or null, by the caller's contract.
    let Some(st) = (unsafe { st.as_mut() }) else {
        return;
    };
    // SAFETY: as in `kmod_eu_armv6_enable`; writing the previous value back takes
    // the access away again.
    let regs = unsafe { PrivilegedCp15::new() };
    let granted = Granted {
        previous: st.previous,
        now: st.read_back,
    };
    st.found = user_enable::disable(&regs, &granted);
}
