//! How a perf session opens its events.

/// How events are opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Hardware, cache, raw and sysfs events do not count in the kernel
    /// (`exclude_kernel`). Default: true (perf_event_paranoid ≤ 2 suffices).
    pub exclude_kernel: bool,
    /// Events do not count in the hypervisor (`exclude_hv`). Default: true.
    pub exclude_hv: bool,
    /// Software events count in the kernel, where they happen. Default: true (needs
    /// perf_event_paranoid ≤ 1 or CAP_PERFMON).
    pub software_counts_kernel: bool,
    /// The leader is `pinned`: the group is never multiplexed. Default: true.
    pub pinned: bool,
    /// The events form one group (the first leads; all on the counters together or
    /// not at all). Without it every event is a group of its own, which the kernel
    /// schedules, and with `pinned` off multiplexes, one by one: perf stat's default,
    /// the only way more events than counters get counted at all. Default: true.
    pub grouped: bool,
    /// Map each event's metadata page (needed for one-instruction reads and for
    /// seeing the kernel reschedule an event). Default: true.
    pub map_pages: bool,
    /// Ask for user-space counter reads where the architecture needs asking (arm64:
    /// config1 bit 1 / the PMU's `rdpmc` term). Default: true.
    pub user_read: bool,
    /// Add the kernel-entry sentinel: one more member of the group, `instructions`
    /// (`cycles` where the PMU does not count instructions) counting only at the
    /// kernel's level (`exclude_user`), read through its page at both region edges;
    /// any count flags the region [`crate::Hazards::KERNEL_ENTRY`] (see
    /// [`crate::Meter::sentinel`]). It needs perf_event_paranoid ≤ 1 or CAP_PERFMON
    /// (Linux 6.12 kernel/events/core.c `perf_allow_kernel`), one more hardware
    /// counter, and one-instruction reads; where one is missing the session opens
    /// without it and says why. Not one of the session's events: not in its names,
    /// specs or readings. Default: false (a counter budget stays as it was; a
    /// [`crate::Meter`] asks for one by default, as [`crate::MeterBuilder::kernel_sentinel`]
    /// says: the meter sets this itself). Set by the rigs (feature `rig`) on sessions of
    /// their own.
    pub(crate) kernel_sentinel: bool,
    /// The machine counts exactly (`crate::machine::emulation`): where every event is
    /// a user-level count of instructions or cycles, regions take the getrusage edges
    /// (every read at the same instruction whatever happened in between) and a switch
    /// or a kernel entry is no hazard ([`crate::verdict::Evidence::exact_emulation`]).
    /// Set by the [`crate::Meter`] from sysfs, never by a caller.
    pub(crate) exact_emulation: Option<crate::machine::emulation::ExactEmulation>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            exclude_kernel: true,
            exclude_hv: true,
            software_counts_kernel: true,
            pinned: true,
            grouped: true,
            map_pages: true,
            user_read: true,
            kernel_sentinel: false,
            exact_emulation: None,
        }
    }
}

impl Options {
    /// With hardware events counting in the kernel too (or not).
    pub fn exclude_kernel(mut self, exclude: bool) -> Self {
        self.exclude_kernel = exclude;
        self
    }

    /// With events counting in the hypervisor too (or not).
    pub fn exclude_hv(mut self, exclude: bool) -> Self {
        self.exclude_hv = exclude;
        self
    }

    /// With software events counting in the kernel (or not).
    pub fn software_counts_kernel(mut self, counts: bool) -> Self {
        self.software_counts_kernel = counts;
        self
    }

    /// With a pinned leader (or a group the kernel may multiplex).
    pub fn pinned(mut self, pinned: bool) -> Self {
        self.pinned = pinned;
        self
    }

    /// As one group (or every event on its own).
    pub fn grouped(mut self, grouped: bool) -> Self {
        self.grouped = grouped;
        self
    }

    /// With or without the metadata pages.
    pub fn map_pages(mut self, map: bool) -> Self {
        self.map_pages = map;
        self
    }

    /// Asking for user-space reads (arm64) or not.
    pub fn user_read(mut self, ask: bool) -> Self {
        self.user_read = ask;
        self
    }

    rig_pub! {
        /// With the kernel-entry sentinel (or without).
        pub fn kernel_sentinel(mut self, on: bool) -> Self {
            self.kernel_sentinel = on;
            self
        }
    }
}
