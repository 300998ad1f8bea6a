//! The PVH start info (Xen `include/public/arch-x86/hvm/start_info.h`): how the boot
//! loader passes the kernel command line (`qemu-system-x86_64 -append …`).

/// `hvm_start_info.magic`: "xEn3" with the high bit of the last byte set.
const HVM_START_MAGIC: u32 = 0x336E_C578;
/// Only the identity-mapped first GiB is readable.
const MAPPED_END: u64 = 1 << 30;
/// Longest command line read.
const MAX_COMMAND_LINE: usize = 4096;

/// The start of `struct hvm_start_info` (version 0 fields used here).
#[repr(C)]
#[allow(
    dead_code,
    reason = "the layout of the C structure; not every field is read"
)]
struct HvmStartInfo {
    magic: u32,
    version: u32,
    flags: u32,
    nr_modules: u32,
    modlist_paddr: u64,
    cmdline_paddr: u64,
    rsdp_paddr: u64,
}

/// The command line of the boot loader whose start info is at physical address
/// `start_info` (EBX at the PVH entry), or `None` if there is none or it is unreadable.
pub fn command_line(start_info: u32) -> Option<&'static str> {
    let address = u64::from(start_info);
    if address == 0 || address + size_of::<HvmStartInfo>() as u64 > MAPPED_END {
        return None;
    }
    // SAFETY: the boot loader put the structure at this physical address, which the
    // identity map covers (checked above); nothing writes it after boot. The read is
    // unaligned-safe.
    let info = unsafe { core::ptr::read_unaligned(address as *const HvmStartInfo) };
    if info.magic != HVM_START_MAGIC || info.cmdline_paddr == 0 {
        return None;
    }
    let start = info.cmdline_paddr;
    let limit = MAX_COMMAND_LINE.min(MAPPED_END.saturating_sub(start) as usize);
    // SAFETY: `start..start + limit` lies inside the identity map (checked above) and is
    // never written after boot; the loader's string is NUL-terminated within it or cut.
    let bytes = unsafe { core::slice::from_raw_parts(start as *const u8, limit) };
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(limit);
    core::str::from_utf8(&bytes[..len]).ok()
}
