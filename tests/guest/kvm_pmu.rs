//! `kvm-pmu`: a minimal VMM for the runs at EL2 on Debian's own kernels
//! (tests/guest/debian-arm64.sh): one VM with one vCPU, KVM's virtual PMU (PMUv3) and an
//! in-kernel GICv3, whose guest counts a known loop on every event counter it is
//! offered. It tells whether the host's perf still places all of a KVM guest's counters
//! (a vCPU's counters are perf events on the vCPU thread: Linux 6.1/6.12
//! arch/arm64/kvm/pmu-emul.c `kvm_pmu_create_perf_event`).
//!
//! ```text
//! kvm-pmu TAG ITERATIONS ROUNDS   ROUNDS runs of the guest in the same VM (0: until
//!                                 killed, one run a second), one line per run
//! ```
//!
//! Each run prints
//! `RESULT kvm-pmu tag=TAG round=R phase=P gic=G n=N iterations=I c0=… c1=… counted=K`
//! (`gic`: the in-kernel GIC's version):
//! `n` is the guest's PMCR_EL0.N, `c<i>` what event counter i counted (event 0x08
//! INST_RETIRED, EL1 only: PMEVTYPER<i>_EL0 = 0x4000_0008, U excludes EL0) across
//! ITERATIONS iterations of a two-instruction loop (`subs`, `b.ne`), and `counted` how
//! many of the N counted at all. `phase` is the first word of /tmp/kvm-phase (`none`
//! without it): the script writes there what it did last (insmod, rmmod), so a VMM kept
//! running across those says which lines came after. A counter that counts sees the
//! loop's 2·I instructions and at most 3 more (the `isb` after the enable and the two
//! PMCR_EL0 writes around the loop, which KVM traps and emulates at EL2): INST_RETIRED
//! counts each architecturally executed instruction once (Arm ARM DDI 0487, D13 "The
//! Performance Monitors Extension", event 0x08). QEMU 10.0.2 under `-icount` gives 2·I + 2.
//! A counter the host cannot place reads 0 (`counted` leaves it out).
//!
//! A failed step prints `RESULT kvm-pmu tag=TAG error=<step> errno=<errno>` and exits 1
//! (2: bad arguments). Built by `cargo xtask` with rustc for aarch64-unknown-linux-musl
//! (static), without the libc crate: the C library's calls are declared below.

use std::arch::global_asm;
use std::process::ExitCode;

// The guest: position independent, entered at EL1 with the MMU off (KVM's vCPU reset
// state: arch/arm64/kvm/reset.c), x0 = iterations (at least 1), x1 = the report
// address (outside guest memory: each store there is a KVM_EXIT_MMIO). Reports: +0 N,
// +8 each counter's value in order, +16 done.
global_asm!(
    ".pushsection .rodata.kvm_pmu_guest, \"a\"",
    ".balign 4",
    ".global kvm_pmu_guest_start",
    ".global kvm_pmu_guest_end",
    "kvm_pmu_guest_start:",
    "mrs x2, pmcr_el0",
    "ubfx x2, x2, #11, #5",
    "str x2, [x1]",
    "mov x3, #0",
    "1: cmp x3, x2",
    "b.hs 2f",
    "msr pmselr_el0, x3",
    // The selector write is seen by the following PMXEV* accesses after an ISB.
    "isb",
    "movz x4, #0x4000, lsl #16",
    "movk x4, #0x8",
    "msr pmxevtyper_el0, x4",
    "msr pmxevcntr_el0, xzr",
    "add x3, x3, #1",
    "b 1b",
    "2: mov x5, #1",
    "lsl x5, x5, x2",
    "sub x5, x5, #1",
    "msr pmovsclr_el0, x5",
    "msr pmcntenset_el0, x5",
    "mov x6, #1",
    "msr pmcr_el0, x6",
    // The enable is in effect for the loop.
    "isb",
    "3: subs x0, x0, #1",
    "b.ne 3b",
    "msr pmcr_el0, xzr",
    // The disable is in effect before the reads.
    "isb",
    "mov x3, #0",
    "4: cmp x3, x2",
    "b.hs 5f",
    "msr pmselr_el0, x3",
    "isb",
    "mrs x7, pmxevcntr_el0",
    "str x7, [x1, #8]",
    "add x3, x3, #1",
    "b 4b",
    "5: str xzr, [x1, #16]",
    "b 5b",
    "kvm_pmu_guest_end:",
    ".popsection",
);

extern "C" {
    static kvm_pmu_guest_start: u8;
    static kvm_pmu_guest_end: u8;
    fn open(path: *const std::ffi::c_char, flags: i32, ...) -> i32;
    fn ioctl(fd: i32, request: u64, ...) -> i32;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn __errno_location() -> *mut i32;
    fn sleep(seconds: u32) -> u32;
}

const O_RDWR: i32 = 2;
const O_CLOEXEC: i32 = 0o2000000;
const PROT_READ: i32 = 1;
const PROT_WRITE: i32 = 2;
const MAP_SHARED: i32 = 1;
const MAP_PRIVATE: i32 = 2;
const MAP_ANONYMOUS: i32 = 0x20;

/// include/uapi/asm-generic/ioctl.h `_IOC` (arm64 uses the generic encoding).
const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | (0xAE << 8) | nr
}
const fn io(nr: u64) -> u64 {
    ioc(0, nr, 0)
}
const fn iow(nr: u64, size: usize) -> u64 {
    ioc(1, nr, size)
}
const fn ior(nr: u64, size: usize) -> u64 {
    ioc(2, nr, size)
}
const fn iowr(nr: u64, size: usize) -> u64 {
    ioc(3, nr, size)
}

// include/uapi/linux/kvm.h (the same in Linux 6.1 and 6.12).
const KVM_CREATE_VM: u64 = io(0x01);
const KVM_GET_VCPU_MMAP_SIZE: u64 = io(0x04);
const KVM_CREATE_VCPU: u64 = io(0x41);
const KVM_SET_USER_MEMORY_REGION: u64 = iow(0x46, size_of::<MemoryRegion>());
const KVM_RUN: u64 = io(0x80);
const KVM_SET_ONE_REG: u64 = iow(0xac, size_of::<OneReg>());
const KVM_ARM_VCPU_INIT: u64 = iow(0xae, size_of::<VcpuInit>());
const KVM_ARM_PREFERRED_TARGET: u64 = ior(0xaf, size_of::<VcpuInit>());
const KVM_CREATE_DEVICE: u64 = iowr(0xe0, size_of::<CreateDevice>());
const KVM_SET_DEVICE_ATTR: u64 = iow(0xe1, size_of::<DeviceAttr>());
const KVM_EXIT_MMIO: u32 = 6;

// arch/arm64/include/uapi/asm/kvm.h.
const KVM_ARM_VCPU_PMU_V3: u32 = 3;
const KVM_ARM_VCPU_PMU_V3_CTRL: u32 = 0;
const KVM_ARM_VCPU_PMU_V3_IRQ: u64 = 0;
const KVM_ARM_VCPU_PMU_V3_INIT: u64 = 1;
const KVM_DEV_TYPE_ARM_VGIC_V2: u32 = 5;
const KVM_DEV_TYPE_ARM_VGIC_V3: u32 = 7;
const KVM_VGIC_V2_ADDR_TYPE_DIST: u64 = 0;
const KVM_VGIC_V2_ADDR_TYPE_CPU: u64 = 1;
const KVM_DEV_ARM_VGIC_GRP_ADDR: u32 = 0;
const KVM_VGIC_V3_ADDR_TYPE_DIST: u64 = 2;
const KVM_VGIC_V3_ADDR_TYPE_REDIST: u64 = 3;
const KVM_DEV_ARM_VGIC_GRP_CTRL: u32 = 4;
const KVM_DEV_ARM_VGIC_CTRL_INIT: u64 = 0;
/// KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE: a core register by its offset
/// in `struct kvm_regs` in 32-bit words.
const CORE_REG: u64 = 0x6030_0000_0010_0000;
/// `regs.regs[n]`: 8 bytes each from offset 0.
const fn reg_x(n: u64) -> u64 {
    CORE_REG | (n * 2)
}
/// `regs.pc`: after the 31 general registers and `sp`.
const REG_PC: u64 = CORE_REG | (32 * 2);

/// Guest memory: 64 KiB at this guest physical address, the guest copied to its start.
const RAM_BASE: u64 = 0x4000_0000;
const RAM_SIZE: usize = 0x1_0000;
/// The report address: no memory there, so each store exits to this VMM.
const REPORT: u64 = 0x1000_0000;
/// The GIC distributor (64 KiB), GICv3's one redistributor (128 KiB) and GICv2's CPU
/// interface (8 KiB), as QEMU's `virt`.
const GIC_DIST: u64 = 0x0800_0000;
const GIC_REDIST: u64 = 0x080a_0000;
const GIC_CPU: u64 = 0x0801_0000;
/// include/uapi/asm-generic/errno-base.h.
const ENODEV: i32 = 19;
const EINTR: i32 = 4;
/// The PMU overflow interrupt: PPI 7 = INTID 23, as QEMU's `virt` and the DT bindings.
const PMU_IRQ: i32 = 23;

#[repr(C)]
struct MemoryRegion {
    slot: u32,
    flags: u32,
    guest_phys_addr: u64,
    memory_size: u64,
    userspace_addr: u64,
}

#[repr(C)]
struct OneReg {
    id: u64,
    addr: u64,
}

#[repr(C)]
#[derive(Default)]
struct VcpuInit {
    target: u32,
    features: [u32; 7],
}

#[repr(C)]
struct CreateDevice {
    kind: u32,
    fd: u32,
    flags: u32,
}

#[repr(C)]
struct DeviceAttr {
    flags: u32,
    group: u32,
    attr: u64,
    addr: u64,
}

/// A failed step: its name and errno.
struct Failed(&'static str, i32);

fn errno() -> i32 {
    // SAFETY: musl's per-thread errno, valid for the thread's life.
    unsafe { *__errno_location() }
}

/// `ioctl(fd, request, arg)` whose result below 0 is `step`'s failure.
fn call(step: &'static str, fd: i32, request: u64, arg: u64) -> Result<i32, Failed> {
    // SAFETY: every request here is given the argument its uapi header defines: an
    // integer, or a pointer to a live `repr(C)` struct of the size encoded in `request`.
    let r = unsafe { ioctl(fd, request, arg) };
    if r < 0 {
        Err(Failed(step, errno()))
    } else {
        Ok(r)
    }
}

fn set_attr(step: &'static str, fd: i32, group: u32, attr: u64, addr: u64) -> Result<(), Failed> {
    let a = DeviceAttr {
        flags: 0,
        group,
        attr,
        addr,
    };
    call(
        step,
        fd,
        KVM_SET_DEVICE_ATTR,
        &a as *const DeviceAttr as u64,
    )
    .map(|_| ())
}

fn set_reg(fd: i32, id: u64, value: u64) -> Result<(), Failed> {
    let r = OneReg {
        id,
        addr: &value as *const u64 as u64,
    };
    call(
        "set_one_reg",
        fd,
        KVM_SET_ONE_REG,
        &r as *const OneReg as u64,
    )
    .map(|_| ())
}

/// The VM, its vCPU and the vCPU's `struct kvm_run`.
struct Vm {
    vcpu: i32,
    run: *mut u8,
    /// The in-kernel GIC's version: 2 or 3.
    gic: u32,
}

/// VM, memory, vCPU with PMUv3, GICv3, PMU interrupt and PMU init, in the order Linux
/// 6.1/6.12 requires (arch/arm64/kvm/pmu-emul.c `kvm_arm_pmu_v3_set_attr`: the IRQ needs
/// an in-kernel irqchip, `kvm_arm_pmu_v3_init` an initialized vGIC and the IRQ;
/// Documentation/virt/kvm/devices/vcpu.rst), and `kvm_arm_pmu_v3_enable` refuses the
/// first KVM_RUN without the init).
fn create() -> Result<Vm, Failed> {
    // SAFETY: a NUL-terminated path.
    let kvm = unsafe { open(c"/dev/kvm".as_ptr(), O_RDWR | O_CLOEXEC) };
    if kvm < 0 {
        return Err(Failed("open_dev_kvm", errno()));
    }
    let vm = call("create_vm", kvm, KVM_CREATE_VM, 0)?;
    // SAFETY: an anonymous private mapping, owned by this process until it exits.
    let ram = unsafe {
        mmap(
            std::ptr::null_mut(),
            RAM_SIZE,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ram as isize == -1 {
        return Err(Failed("mmap_ram", errno()));
    }
    // SAFETY: both symbols are in this binary's .rodata, start before end.
    let guest = unsafe {
        let start = &raw const kvm_pmu_guest_start;
        let end = &raw const kvm_pmu_guest_end;
        std::slice::from_raw_parts(start, end.offset_from(start) as usize)
    };
    if guest.len() > RAM_SIZE {
        return Err(Failed("guest_size", 0));
    }
    // SAFETY: `ram` is RAM_SIZE writable bytes, the guest fewer (checked).
    unsafe { std::ptr::copy_nonoverlapping(guest.as_ptr(), ram, guest.len()) };
    let region = MemoryRegion {
        slot: 0,
        flags: 0,
        guest_phys_addr: RAM_BASE,
        memory_size: RAM_SIZE as u64,
        userspace_addr: ram as u64,
    };
    call(
        "set_user_memory_region",
        vm,
        KVM_SET_USER_MEMORY_REGION,
        &region as *const MemoryRegion as u64,
    )?;
    let vcpu = call("create_vcpu", vm, KVM_CREATE_VCPU, 0)?;
    let mut init = VcpuInit::default();
    call(
        "preferred_target",
        vm,
        KVM_ARM_PREFERRED_TARGET,
        &mut init as *mut VcpuInit as u64,
    )?;
    init.features[0] |= 1 << KVM_ARM_VCPU_PMU_V3;
    call(
        "vcpu_init_pmu_v3",
        vcpu,
        KVM_ARM_VCPU_INIT,
        &init as *const VcpuInit as u64,
    )?;
    let gic = gic(vm)?;
    let irq = PMU_IRQ;
    set_attr(
        "pmu_irq",
        vcpu,
        KVM_ARM_VCPU_PMU_V3_CTRL,
        KVM_ARM_VCPU_PMU_V3_IRQ,
        &irq as *const i32 as u64,
    )?;
    set_attr(
        "pmu_init",
        vcpu,
        KVM_ARM_VCPU_PMU_V3_CTRL,
        KVM_ARM_VCPU_PMU_V3_INIT,
        0,
    )?;
    let size = call("vcpu_mmap_size", kvm, KVM_GET_VCPU_MMAP_SIZE, 0)?;
    // SAFETY: the vCPU's shared `struct kvm_run`, `size` bytes as KVM says.
    let run = unsafe {
        mmap(
            std::ptr::null_mut(),
            size as usize,
            PROT_READ | PROT_WRITE,
            MAP_SHARED,
            vcpu,
            0,
        )
    };
    if run as isize == -1 {
        return Err(Failed("mmap_run", errno()));
    }
    Ok(Vm { vcpu, run, gic })
}

/// The in-kernel GIC the PMU interrupt needs: a GICv3 where the host's GIC can offer
/// one, else a GICv2 (QEMU's `virt` has a GICv2 unless `gic-version=3`: KVM then
/// registers only the GICv2 device, Linux 6.12 arch/arm64/kvm/vgic/vgic-v2.c
/// `vgic_v2_probe` `kvm_register_vgic_device`, and KVM_CREATE_DEVICE of an unregistered
/// type fails with ENODEV). Addresses as QEMU's `virt`. Returns the version created.
fn gic(vm: i32) -> Result<u32, Failed> {
    let addr = |v: &u64| v as *const u64 as u64;
    let mut gic = CreateDevice {
        kind: KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    let (version, (dist_type, dist), (cpu_type, cpu)) = match call(
        "create_vgic_v3",
        vm,
        KVM_CREATE_DEVICE,
        &mut gic as *mut CreateDevice as u64,
    ) {
        Ok(_) => (
            3,
            (KVM_VGIC_V3_ADDR_TYPE_DIST, GIC_DIST),
            (KVM_VGIC_V3_ADDR_TYPE_REDIST, GIC_REDIST),
        ),
        Err(Failed(_, ENODEV)) => {
            gic.kind = KVM_DEV_TYPE_ARM_VGIC_V2;
            call(
                "create_vgic_v2",
                vm,
                KVM_CREATE_DEVICE,
                &mut gic as *mut CreateDevice as u64,
            )?;
            (
                2,
                (KVM_VGIC_V2_ADDR_TYPE_DIST, GIC_DIST),
                (KVM_VGIC_V2_ADDR_TYPE_CPU, GIC_CPU),
            )
        }
        Err(f) => return Err(f),
    };
    let fd = gic.fd as i32;
    set_attr(
        "vgic_dist",
        fd,
        KVM_DEV_ARM_VGIC_GRP_ADDR,
        dist_type,
        addr(&dist),
    )?;
    set_attr(
        "vgic_cpu",
        fd,
        KVM_DEV_ARM_VGIC_GRP_ADDR,
        cpu_type,
        addr(&cpu),
    )?;
    set_attr(
        "vgic_init",
        fd,
        KVM_DEV_ARM_VGIC_GRP_CTRL,
        KVM_DEV_ARM_VGIC_CTRL_INIT,
        0,
    )?;
    Ok(version)
}

/// What one run of the guest reported.
struct Report {
    n: u64,
    counters: Vec<u64>,
}

/// One run of the guest from its start: N, then each counter, until done.
fn run_guest(vm: &Vm, iterations: u64) -> Result<Report, Failed> {
    set_reg(vm.vcpu, REG_PC, RAM_BASE)?;
    set_reg(vm.vcpu, reg_x(0), iterations.max(1))?;
    set_reg(vm.vcpu, reg_x(1), REPORT)?;
    let mut report = Report {
        n: 0,
        counters: Vec::new(),
    };
    // Bounded: N ≤ 31 counters and three other reports.
    for _ in 0..64 {
        call("run", vm.vcpu, KVM_RUN, 0)?;
        // SAFETY: `run` maps `struct kvm_run` (include/uapi/linux/kvm.h): exit_reason at
        // byte 8, the exit union at 32; for KVM_EXIT_MMIO phys_addr (u64), data[8],
        // len (u32), is_write (u8). The vCPU is not running while this thread reads it.
        let (reason, phys, data, len, write) = unsafe {
            let at = |o: usize| vm.run.add(o);
            (
                (at(8) as *const u32).read(),
                (at(32) as *const u64).read_unaligned(),
                (at(40) as *const u64).read_unaligned(),
                (at(48) as *const u32).read_unaligned(),
                at(52).read(),
            )
        };
        if reason != KVM_EXIT_MMIO {
            return Err(Failed("unexpected_exit", reason as i32));
        }
        if write == 0 || len != 8 {
            return Err(Failed("unexpected_mmio", len as i32));
        }
        match phys.wrapping_sub(REPORT) {
            0 => report.n = data,
            8 => report.counters.push(data),
            16 => {
                if report.counters.len() as u64 != report.n {
                    return Err(Failed("counter_reports", report.counters.len() as i32));
                }
                complete_mmio(vm)?;
                return Ok(report);
            }
            _ => return Err(Failed("unexpected_address", 0)),
        }
    }
    Err(Failed("too_many_exits", 0))
}

/// Completes the last MMIO exit without entering the guest: KVM_RUN finishes a pending
/// MMIO write by stepping the guest's PC past the store (Linux 6.1/6.12
/// arch/arm64/kvm/mmio.c `kvm_handle_mmio_return`, `kvm_incr_pc`), and with
/// `immediate_exit` set returns EINTR at once with that step committed
/// (arch/arm64/kvm/arm.c `kvm_arch_vcpu_ioctl_run`). Without this the next run's PC
/// would be stepped too, past the guest's first instruction.
fn complete_mmio(vm: &Vm) -> Result<(), Failed> {
    // SAFETY: `immediate_exit` is byte 1 of `struct kvm_run`; the vCPU is not running.
    unsafe { vm.run.add(1).write(1) };
    let r = call("complete_mmio", vm.vcpu, KVM_RUN, 0);
    // SAFETY: as above.
    unsafe { vm.run.add(1).write(0) };
    match r {
        Err(Failed(_, EINTR)) => Ok(()),
        Err(f) => Err(f),
        Ok(_) => Err(Failed("complete_mmio_ran", 0)),
    }
}

/// The first word of /tmp/kvm-phase, `none` without it.
fn phase() -> String {
    std::fs::read_to_string("/tmp/kvm-phase")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "none".into())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (tag, iterations, rounds) = match args.as_slice() {
        [tag, i, r] => match (i.parse::<u64>(), r.parse::<u64>()) {
            (Ok(i), Ok(r)) if i >= 1 => (tag.clone(), i, r),
            _ => {
                eprintln!("usage: kvm-pmu TAG ITERATIONS ROUNDS");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: kvm-pmu TAG ITERATIONS ROUNDS");
            return ExitCode::from(2);
        }
    };
    let fail = |Failed(step, e): Failed| {
        println!("RESULT kvm-pmu tag={tag} error={step} errno={e}");
        ExitCode::from(1)
    };
    let vm = match create() {
        Ok(vm) => vm,
        Err(f) => return fail(f),
    };
    let mut round = 0u64;
    while rounds == 0 || round < rounds {
        let report = match run_guest(&vm, iterations) {
            Ok(r) => r,
            Err(f) => return fail(f),
        };
        let mut line = format!(
            "RESULT kvm-pmu tag={tag} round={round} phase={} gic={} n={} iterations={iterations}",
            phase(),
            vm.gic,
            report.n
        );
        for (i, c) in report.counters.iter().enumerate() {
            line.push_str(&format!(" c{i}={c}"));
        }
        let counted = report.counters.iter().filter(|&&c| c > 0).count();
        line.push_str(&format!(" counted={counted}"));
        println!("{line}");
        round += 1;
        if rounds == 0 {
            // SAFETY: plain libc sleep.
            unsafe { sleep(1) };
        }
    }
    ExitCode::SUCCESS
}
