//! Just enough of a GICv2 (Arm IHI 0048B; the GIC-400 of the Raspberry Pi 4 and 5, the
//! GICv2 of QEMU `virt`) to take the PMU overflow interrupt on the boot CPU: group 0,
//! one priority, acknowledge and end of interrupt.

const GICD_CTLR: usize = 0x000;
const GICD_ISENABLER: usize = 0x100;
const GICD_IPRIORITYR: usize = 0x400;
const GICD_ITARGETSR: usize = 0x800;
const GICC_CTLR: usize = 0x000;
const GICC_PMR: usize = 0x004;
const GICC_IAR: usize = 0x00C;
const GICC_EOIR: usize = 0x010;

/// Spurious INTID returned by GICC_IAR when nothing is pending.
pub const SPURIOUS: u32 = 1023;

/// A GICv2 at fixed addresses.
pub struct Gic2 {
    distributor: usize,
    cpu_interface: usize,
}

fn write(addr: usize, value: u32) {
    // SAFETY: every address passed here is a register of the board's GICv2 (the
    // contract of `Gic2::new`).
    unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
}

fn read(addr: usize) -> u32 {
    // SAFETY: as in `write`.
    unsafe { core::ptr::read_volatile(addr as *const u32) }
}

impl Gic2 {
    /// The GICv2 whose distributor and CPU interface are at these addresses.
    ///
    /// # Safety
    /// They are the GICv2's on the board the code runs on (the MMU is off), and the
    /// image owns it: nothing else programs it.
    pub const unsafe fn new(distributor: usize, cpu_interface: usize) -> Self {
        Self {
            distributor,
            cpu_interface,
        }
    }

    /// Enables the distributor and CPU interface and each of `intids` at priority 0x80;
    /// a shared peripheral interrupt (INTID 32 and up) is also targeted at CPU 0.
    pub fn enable(&self, intids: &[u32]) {
        let d = self.distributor;
        write(d + GICD_CTLR, 1);
        for &intid in intids {
            let byte_reg = intid as usize & !3;
            let shift = (intid % 4) * 8;
            let prio_reg = d + GICD_IPRIORITYR + byte_reg;
            write(
                prio_reg,
                (read(prio_reg) & !(0xFF << shift)) | (0x80 << shift),
            );
            if intid >= 32 {
                let target_reg = d + GICD_ITARGETSR + byte_reg;
                write(
                    target_reg,
                    (read(target_reg) & !(0xFF << shift)) | (0x01 << shift),
                );
            }
            write(
                d + GICD_ISENABLER + 4 * (intid as usize / 32),
                1 << (intid % 32),
            );
        }
        write(self.cpu_interface + GICC_PMR, 0xFF);
        write(self.cpu_interface + GICC_CTLR, 1);
    }

    /// Acknowledges the highest-priority pending interrupt: its INTID, or `None` when
    /// the read was spurious.
    pub fn acknowledge(&self) -> Option<u32> {
        let intid = read(self.cpu_interface + GICC_IAR) & 0x3FF;
        (intid != SPURIOUS).then_some(intid)
    }

    /// Signals the end of handling `intid`.
    pub fn end_of_interrupt(&self, intid: u32) {
        write(self.cpu_interface + GICC_EOIR, intid);
    }
}
