//! PVH entry: from 32-bit protected mode to Rust in 64-bit long mode.
//!
//! `qemu-system-x86_64 -kernel` loads multiboot v1 only from ELF32 images, so this
//! ELF64 image boots with the PVH protocol instead (Xen's `arch-x86/xen.h`, "PVH boot";
//! QEMU `hw/i386/x86-common.c`, `load_elfboot`): an ELF note
//! `XEN_ELFNOTE_PHYS32_ENTRY` (type 18, name "Xen") gives the physical address of a
//! 32-bit entry point. QEMU loads the PT_LOAD segments at their physical addresses and
//! starts there with paging off, flat 4 GiB code and data segments, interrupts off and
//! EBX = physical address of the `hvm_start_info` structure. There is no stack.
//!
//! The 32-bit code zeroes `.bss`, identity-maps the first 1 GiB with 2 MiB pages (U/S
//! set: ring 3 runs probes from the same image, SDM Vol. 3A §4.6), enables PAE, sets
//! EFER.LME, turns paging on (which activates long mode, SDM Vol. 3A §10.8.5), loads a
//! boot GDT with a 64-bit code segment and far-returns into 64-bit code, which sets up
//! the stack and calls [`crate::main`]. [`crate::cpu::init`] later replaces the boot GDT
//! with the full one (ring-3 segments and the TSS).
//!
//! `x86_64-unknown-none` is soft-float (no SSE in generated code), so CR0/CR4 need no
//! FPU/SSE setup.

use core::arch::global_asm;

/// Size of the boot stack, on which all of [`crate::main`] runs.
pub const BOOT_STACK_SIZE: usize = 64 * 1024;

global_asm!(
    r#"
    // XEN_ELFNOTE_PHYS32_ENTRY. QEMU reads the descriptor as a pointer-sized value for
    // an ELF64 image (read_pvh_start_addr), so it is a .quad, as in Linux's
    // arch/x86/platform/pvh/head.S.
    .section .note.Xen, "a", @note
    .balign 4
    .long 4                      // n_namesz: "Xen\0"
    .long 8                      // n_descsz
    .long 18                     // n_type: XEN_ELFNOTE_PHYS32_ENTRY
    .asciz "Xen"
    .balign 4
    .quad pvh_start32
    .balign 4

    .section .text.boot, "ax"
    .code32
    .global pvh_start32
pvh_start32:
    cli
    cld
    mov esi, ebx                 // hvm_start_info: kept for main

    // Zero .bss (page tables and stacks live there).
    mov edi, offset __bss_start
    mov ecx, offset __bss_end
    sub ecx, edi
    xor eax, eax
    rep stosb

    // PML4[0] -> PDPT, PDPT[0] -> PD: present, writable, user.
    mov eax, offset BOOT_PDPT
    or eax, 0x7
    mov dword ptr [BOOT_PML4], eax
    mov eax, offset BOOT_PD
    or eax, 0x7
    mov dword ptr [BOOT_PDPT], eax

    // PD[i] = i * 2 MiB, present, writable, user, page size (2 MiB).
    xor ecx, ecx
.Lfill_pd:
    mov eax, ecx
    shl eax, 21
    or eax, 0x87
    mov dword ptr [BOOT_PD + ecx * 8], eax
    inc ecx
    cmp ecx, 512
    jne .Lfill_pd

    mov eax, offset BOOT_PML4
    mov cr3, eax

    mov eax, cr4
    or eax, 1 << 5               // CR4.PAE
    mov cr4, eax

    mov ecx, 0xC0000080          // IA32_EFER
    rdmsr
    or eax, 1 << 8               // EFER.LME
    wrmsr

    mov eax, cr0
    or eax, (1 << 31) | (1 << 16) | 1    // CR0.PG | CR0.WP | CR0.PE
    mov cr0, eax                 // long mode is active from here (compatibility mode)

    lgdt [BOOT_GDT_POINTER]
    // Far return to the 64-bit code segment: the jump that enters 64-bit mode.
    // (Registers, not immediates: the assembler would pick 16-bit pushes here.)
    mov eax, 0x08
    push eax
    mov eax, offset .Llong_mode
    push eax
    retf

    .code64
.Llong_mode:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor eax, eax
    mov fs, ax
    mov gs, ax
    lea rsp, [rip + BOOT_STACK_TOP]
    xor ebp, ebp
    mov edi, esi                 // main(start_info: u32)
    call {main}
    ud2

    .section .rodata.boot, "a"
    .balign 8
BOOT_GDT:
    .quad 0
    .quad 0x00AF9B000000FFFF     // 0x08: 64-bit code, DPL 0, accessed
    .quad 0x00CF93000000FFFF     // 0x10: data, DPL 0, accessed
.Lboot_gdt_end:
BOOT_GDT_POINTER:
    .word .Lboot_gdt_end - BOOT_GDT - 1
    .long BOOT_GDT

    .section .bss.boot, "aw", @nobits
    .balign 4096
BOOT_PML4:
    .skip 4096
BOOT_PDPT:
    .skip 4096
BOOT_PD:
    .skip 4096
    .balign 16
BOOT_STACK:
    .skip {stack_size}
BOOT_STACK_TOP:
    "#,
    main = sym crate::main,
    stack_size = const BOOT_STACK_SIZE,
);
