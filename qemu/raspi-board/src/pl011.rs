//! The PL011 UART (BCM2835 ARM Peripherals, chapter 13; Arm PrimeCell UART PL011 TRM)
//! on GPIO 14 (TXD0) and 15 (RXD0), function ALT0, at 115200 baud, 8 data bits, no
//! parity, 1 stop bit, from the 48 MHz UART clock the firmware sets up on the Pi 3 and
//! Pi 4 (`init_uart_clock`'s default; docs/boards.md has the config.txt lines).

use crate::Mmio;

const DR: usize = 0x00;
const FR: usize = 0x18;
const IBRD: usize = 0x24;
const FBRD: usize = 0x28;
const LCRH: usize = 0x2C;
const CR: usize = 0x30;
const ICR: usize = 0x44;
const FR_TXFF: u32 = 1 << 5;
const FR_BUSY: u32 = 1 << 3;
/// LCRH: WLEN = 0b11 (8 bits), FEN (FIFOs on).
const LCRH_8N1_FIFO: u32 = (0b11 << 5) | (1 << 4);
/// CR: UARTEN, TXE, RXE.
const CR_ENABLE: u32 = (1 << 0) | (1 << 8) | (1 << 9);

/// The UART clock the divisors are computed for.
pub const UART_CLOCK_HZ: u32 = 48_000_000;
/// The baud rate.
pub const BAUD: u32 = 115_200;

/// Integer and fractional baud-rate divisors for `clock` and `baud`: divisor = clock /
/// (16 * baud), fraction in 64ths, rounded (PL011 TRM 3.3.6).
pub const fn divisors(clock: u32, baud: u32) -> (u32, u32) {
    let x64 = (clock as u64 * 4 + baud as u64 / 2) / baud as u64; // 64 * clock / (16 * baud)
    ((x64 / 64) as u32, (x64 % 64) as u32)
}

/// A PL011 at a fixed base.
#[derive(Clone, Copy)]
pub struct Pl011 {
    base: usize,
}

impl Pl011 {
    /// The PL011 whose registers start at `base` (ARM physical address).
    ///
    /// # Safety
    /// A PL011 is at `base` on the board the code runs on (the MMU is off).
    pub const unsafe fn new(base: usize) -> Self {
        Self { base }
    }

    fn reg(self, offset: usize) -> Mmio {
        // SAFETY: `new`'s contract: a PL011 at `base`; `offset` is one of its registers.
        unsafe { Mmio::new(self.base + offset) }
    }

    /// Programs 115200 8N1 and enables transmit and receive: disable, wait until idle,
    /// divisors, line control, enable (the order the PL011 TRM 3.3.8 asks for).
    pub fn init(self) {
        self.reg(CR).write(0);
        while self.reg(FR).read() & FR_BUSY != 0 {}
        self.reg(ICR).write(0x7FF);
        let (ibrd, fbrd) = divisors(UART_CLOCK_HZ, BAUD);
        self.reg(IBRD).write(ibrd);
        self.reg(FBRD).write(fbrd);
        self.reg(LCRH).write(LCRH_8N1_FIFO);
        self.reg(CR).write(CR_ENABLE);
    }

    /// Sends `b`, waiting while the transmit FIFO is full.
    pub fn write_byte(self, b: u8) {
        while self.reg(FR).read() & FR_TXFF != 0 {}
        self.reg(DR).write(u32::from(b));
    }
}

/// Puts GPIO 14 and 15 in function ALT0 (PL011 TXD0/RXD0): GPFSEL1 (base + 0x04), three
/// bits per pin, pin 14 at bits 14:12, pin 15 at 17:15, ALT0 = 0b100 (BCM2835 ARM
/// Peripherals 6.2, table 6-31; the same on the BCM2837 and BCM2711).
///
/// # Safety
/// The BCM283x/BCM2711 GPIO block is at `gpio_base`, and nothing else on the board uses
/// GPIO 14 and 15.
pub unsafe fn gpio_14_15_alt0(gpio_base: usize) {
    const ALT0: u32 = 0b100;
    // SAFETY: the caller's contract: GPFSEL1 of the GPIO block.
    let gpfsel1 = unsafe { Mmio::new(gpio_base + 0x04) };
    let v = gpfsel1.read() & !((0b111 << 12) | (0b111 << 15));
    gpfsel1.write(v | (ALT0 << 12) | (ALT0 << 15));
}
