//! Segmentation for long mode with a ring 3: the GDT, the TSS and the stacks.
//!
//! GDT layout (SDM Vol. 3A §3.4.5, §5.2.1): the user segments sit in the order
//! SYSRET expects (data, then code), so STAR could be programmed for them too.
//!
//! | selector | descriptor |
//! |---|---|
//! | 0x08 | 64-bit code, DPL 0 |
//! | 0x10 | data, DPL 0 |
//! | 0x18 (0x1B with RPL 3) | data, DPL 3 |
//! | 0x20 (0x23 with RPL 3) | 64-bit code, DPL 3 |
//! | 0x28 | 64-bit TSS (16 bytes) |
//!
//! The TSS gives RSP0, the stack the CPU switches to when an exception or `int 0x80`
//! leaves ring 3 (SDM Vol. 3A §7.7), and IST1, a known-good stack for #DF. Its I/O map
//! base points past its end: ring 3 (IOPL 0) may use no I/O port.

use core::cell::UnsafeCell;
use core::mem::size_of;

use x86::bits64::segmentation::Descriptor64;
use x86::bits64::task::TaskStateSegment;
use x86::dtables::DescriptorTablePointer;
use x86::segmentation::{
    BuildDescriptor, CodeSegmentType, DataSegmentType, Descriptor, DescriptorBuilder,
    GateDescriptorBuilder, SegmentDescriptorBuilder, SegmentSelector,
};
use x86::Ring;

/// Ring-0 code segment.
pub const KERNEL_CODE: SegmentSelector = SegmentSelector::new(1, Ring::Ring0);
/// Ring-0 data (and stack) segment.
pub const KERNEL_DATA: SegmentSelector = SegmentSelector::new(2, Ring::Ring0);
/// Ring-3 data (and stack) segment, RPL 3.
pub const USER_DATA: SegmentSelector = SegmentSelector::new(3, Ring::Ring3);
/// Ring-3 code segment, RPL 3.
pub const USER_CODE: SegmentSelector = SegmentSelector::new(4, Ring::Ring3);
/// The task state segment.
pub const TSS: SegmentSelector = SegmentSelector::new(5, Ring::Ring0);

/// The IST slot (1-based, as in the gate descriptor) of the double-fault stack.
pub const DOUBLE_FAULT_IST: u8 = 1;

/// Memory written only while the single CPU runs with interrupts off, before the
/// hardware is told its address (GDT, TSS, IDT), or by the CPU itself (stacks).
#[derive(Debug)]
#[repr(transparent)]
pub struct CpuOwned<T>(UnsafeCell<T>);

// SAFETY: the image runs on one CPU and never enables interrupts; the only concurrent
// "user" of these values is the CPU reading them through GDTR/IDTR/TR/RSP.
unsafe impl<T> Sync for CpuOwned<T> {}

impl<T> CpuOwned<T> {
    /// Wraps `value`.
    pub const fn new(value: T) -> Self {
        Self(UnsafeCell::new(value))
    }

    /// A raw pointer to the value.
    pub const fn get(&self) -> *mut T {
        self.0.get()
    }
}

/// A stack: 16-byte aligned, in `.bss`.
#[derive(Debug)]
#[repr(C, align(16))]
pub struct Stack<const N: usize>(CpuOwned<[u8; N]>);

impl<const N: usize> Stack<N> {
    /// A zeroed stack.
    pub const fn new() -> Self {
        Self(CpuOwned::new([0; N]))
    }

    /// The address just past the stack's end (stacks grow down; 16-byte aligned).
    pub fn top(&self) -> u64 {
        self.0.get() as u64 + N as u64
    }
}

/// The stack of exceptions and `int 0x80` from ring 3 (TSS.RSP0).
static RING0_STACK: Stack<{ 16 * 1024 }> = Stack::new();
/// The stack of the double-fault handler (TSS.IST1).
static DOUBLE_FAULT_STACK: Stack<{ 16 * 1024 }> = Stack::new();
/// The stack ring-3 probes run on.
static USER_STACK: Stack<{ 16 * 1024 }> = Stack::new();

/// The top of the ring-3 stack.
pub fn user_stack_top() -> u64 {
    USER_STACK.top()
}

#[repr(C, align(16))]
struct Gdt {
    null: Descriptor,
    kernel_code: Descriptor,
    kernel_data: Descriptor,
    user_data: Descriptor,
    user_code: Descriptor,
    tss: Descriptor64,
}

static GDT: CpuOwned<Gdt> = CpuOwned::new(Gdt {
    null: Descriptor::NULL,
    kernel_code: Descriptor::NULL,
    kernel_data: Descriptor::NULL,
    user_data: Descriptor::NULL,
    user_code: Descriptor::NULL,
    tss: Descriptor64::NULL,
});

static TSS_SEGMENT: CpuOwned<TaskStateSegment> = CpuOwned::new(TaskStateSegment::new());

fn code_segment(ring: Ring) -> Descriptor {
    // Base and limit are ignored in 64-bit mode; L=1 makes it a 64-bit segment.
    DescriptorBuilder::code_descriptor(0, 0xF_FFFF, CodeSegmentType::ExecuteReadAccessed)
        .present()
        .dpl(ring)
        .l()
        .limit_granularity_4kb()
        .finish()
}

fn data_segment(ring: Ring) -> Descriptor {
    DescriptorBuilder::data_descriptor(0, 0xF_FFFF, DataSegmentType::ReadWriteAccessed)
        .present()
        .dpl(ring)
        .db()
        .limit_granularity_4kb()
        .finish()
}

/// Loads the full GDT, reloads every segment register and loads the TSS.
///
/// Called once, early, from [`crate::main`].
pub fn init() {
    let tss = TSS_SEGMENT.get();
    // SAFETY: one CPU, interrupts off, and the TSS is not loaded yet: nothing else
    // reads or writes it.
    unsafe {
        (*tss).set_rsp(Ring::Ring0, RING0_STACK.top());
        (*tss).set_ist(usize::from(DOUBLE_FAULT_IST - 1), DOUBLE_FAULT_STACK.top());
        (*tss).iomap_base = size_of::<TaskStateSegment>() as u16;
    }
    let gdt = GDT.get();
    let tss_limit = size_of::<TaskStateSegment>() as u64 - 1;
    // SAFETY: as above; the CPU runs on the boot GDT until the lgdt below.
    unsafe {
        (*gdt).kernel_code = code_segment(Ring::Ring0);
        (*gdt).kernel_data = data_segment(Ring::Ring0);
        (*gdt).user_data = data_segment(Ring::Ring3);
        (*gdt).user_code = code_segment(Ring::Ring3);
        (*gdt).tss = <DescriptorBuilder as GateDescriptorBuilder<u64>>::tss_descriptor(
            tss as u64, tss_limit, true,
        )
        .present()
        .finish();
    }
    // SAFETY: the GDT is complete and static; its code and data segments at the
    // selectors the boot GDT used are equivalent, so reloading CS, SS and the data
    // segments right after keeps executing the same code with the same stack. The TSS
    // descriptor is available (not busy) and describes the static TSS.
    unsafe {
        x86::dtables::lgdt(&DescriptorTablePointer::new(&*gdt));
        x86::bits64::segmentation::load_cs(KERNEL_CODE);
        x86::segmentation::load_ss(KERNEL_DATA);
        x86::segmentation::load_ds(KERNEL_DATA);
        x86::segmentation::load_es(KERNEL_DATA);
        x86::task::load_tr(TSS);
    }
}
