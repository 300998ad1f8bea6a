//! Just enough GICv2 (QEMU virt: distributor 0x0800_0000, CPU interface 0x0801_0000)
//! to take one private peripheral interrupt: the PMU's PPI 23 (INTID 23).

const GICD: usize = 0x0800_0000;
const GICC: usize = 0x0801_0000;
const GICD_CTLR: usize = 0x000;
const GICD_ISENABLER0: usize = 0x100;
const GICD_IPRIORITYR: usize = 0x400;
const GICC_CTLR: usize = 0x000;
const GICC_PMR: usize = 0x004;
const GICC_IAR: usize = 0x00C;
const GICC_EOIR: usize = 0x010;

/// INTID of the PMU overflow interrupt on `-M virt` (PPI 7 = INTID 16 + 7; the
/// device tree's `interrupts = <1 7 …>`).
pub const PMU_INTID: u32 = 23;

/// Spurious INTID returned by GICC_IAR when nothing is pending.
pub const SPURIOUS: u32 = 1023;

fn write(addr: usize, value: u32) {
    // SAFETY: every address passed here is a GICv2 register of QEMU's virt machine.
    unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
}

fn read(addr: usize) -> u32 {
    // SAFETY: as in `write`.
    unsafe { core::ptr::read_volatile(addr as *const u32) }
}

/// Enables the distributor and CPU interface and INTID `intid` (a PPI) at priority 0x80.
pub fn enable(intid: u32) {
    write(GICD + GICD_CTLR, 1);
    let prio_reg = GICD + GICD_IPRIORITYR + (intid as usize & !3);
    let shift = (intid % 4) * 8;
    write(
        prio_reg,
        (read(prio_reg) & !(0xFF << shift)) | (0x80 << shift),
    );
    write(GICD + GICD_ISENABLER0, 1 << intid);
    write(GICC + GICC_PMR, 0xFF);
    write(GICC + GICC_CTLR, 1);
}

/// Acknowledges the highest-priority pending interrupt and returns its INTID.
pub fn acknowledge() -> u32 {
    read(GICC + GICC_IAR) & 0x3FF
}

/// Signals the end of handling `intid`.
pub fn end_of_interrupt(intid: u32) {
    write(GICC + GICC_EOIR, intid);
}
