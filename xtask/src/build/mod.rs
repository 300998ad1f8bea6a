//! Builds: the test kernels and their modules, the guests' initramfs archives, the
//! bare-metal images and Raspberry Pi boards. Above the engine and set-up.

pub mod arm32_demo;
pub mod boards;
pub mod images;
pub mod initramfs;
pub mod kernel;
pub mod stock_module;
