//! The group's file descriptors and their `read()`s: opening every event (the first
//! one the leader), the ioctls that enable, disable and reset them together, and the
//! group or per-event `read()` formats (include/uapi/linux/perf_event.h `read_format`).

use std::os::fd::{AsFd, OwnedFd};

use perf_event_open_sys::bindings as b;

use super::options::Options;
use crate::error::{Error, Op, OpenError, Result};
use crate::machine::events::{EventKind, EventSpec};
use crate::machine::sysfs::Sysfs;
use crate::perf::page::MmapPage;
use crate::sys;
use crate::verdict::FallbackReason;
use crate::MAX_EVENTS;

/// One open event.
#[derive(Debug)]
pub(super) struct OpenEvent {
    pub(super) spec: EventSpec,
    pub(super) fd: OwnedFd,
    pub(super) page: Option<MmapPage>,
    pub(super) id: u64,
}

/// The values of one group `read()` (one `read()` per event when not
/// [`Options::grouped`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupRead {
    /// The group's total time enabled (ns); the first event's when not grouped.
    pub time_enabled: u64,
    /// The group's total time on the counters (ns); the first event's when not
    /// grouped.
    pub time_running: u64,
    pub(super) values: [u64; MAX_EVENTS],
    /// Per event (time_enabled, time_running): the group's for every event of a group.
    pub(super) times: [(u64, u64); MAX_EVENTS],
    pub(super) len: usize,
}

impl GroupRead {
    /// One count per event, in the order the events were given.
    pub fn values(&self) -> &[u64] {
        &self.values[..self.len]
    }

    /// Per event, its (time_enabled, time_running) in ns: the group's for each event
    /// of a group, each event's own when they were opened ungrouped.
    pub fn times(&self) -> &[(u64, u64)] {
        &self.times[..self.len]
    }
}

/// The open events of a group.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) events: Vec<OpenEvent>,
    pub(super) software_ids: [Option<u64>; MAX_EVENTS],
    /// arm64 with `kernel.perf_user_access = 0` at open: the kernel then publishes
    /// index 0 for hardware events even while they count (arm_pmuv3.c
    /// `armv8pmu_user_event_idx`), so index 0 means "no user access", not "not on a
    /// counter".
    pub(super) user_reads_off: bool,
    /// Opened with `PERF_FORMAT_GROUP` (two events or more, grouped).
    pub(super) group_format: bool,
    /// How the events were opened.
    pub(super) options: Options,
    /// The kernel-entry sentinel ([`Options::kernel_sentinel`]): not one of `events`; a
    /// member of the group when the events are grouped (the group `read()` then has
    /// one more value, last), else an event of its own.
    pub(super) sentinel: Option<OpenEvent>,
}

/// Whether the kernel registered a CPU PMU (`cpu`, `cpu_core`, `armv8_pmuv3_0`, …) in
/// /sys/bus/event_source/devices: then a hardware event it refuses as not supported
/// is one this PMU does not implement, not a machine without counters.
pub(super) fn cpu_pmu_registered() -> bool {
    Sysfs::system()
        .pmu_names()
        .is_ok_and(|names| names.iter().any(|n| crate::machine::sysfs::is_cpu_pmu(n)))
}

impl Group {
    pub(super) fn open(specs: Vec<EventSpec>, options: Options) -> Result<Self> {
        if specs.is_empty() {
            return Err(Error::Group(crate::error::GroupError::NoEvents));
        }
        if specs.len() > MAX_EVENTS {
            return Err(Error::Group(crate::error::GroupError::TooMany {
                given: specs.len(),
                max: MAX_EVENTS,
            }));
        }
        let paranoid = sys::perf_event_paranoid();
        let group_format = options.grouped && specs.len() > 1;
        let mut events: Vec<OpenEvent> = Vec::with_capacity(specs.len());
        let mut software_ids = [None; MAX_EVENTS];
        for (i, spec) in specs.into_iter().enumerate() {
            let software = spec.kind == EventKind::Software;
            let exclude_kernel = if software {
                !options.software_counts_kernel
            } else {
                options.exclude_kernel
            };
            let mut attr = event_attr(&spec, options.user_read);
            if group_format {
                attr.read_format |= u64::from(b::PERF_FORMAT_GROUP);
            }
            attr.set_disabled(1);
            let leader = events
                .first()
                .filter(|_| options.grouped)
                .map(|e| e.fd.as_fd());
            attr.set_pinned(u64::from(leader.is_none() && options.pinned));
            attr.set_exclude_kernel(u64::from(exclude_kernel));
            attr.set_exclude_hv(u64::from(options.exclude_hv));
            let fd = sys::perf::open(&mut attr, leader).map_err(|errno| Error::Open {
                event: spec.name.clone(),
                cause: OpenError::from_errno(
                    errno,
                    paranoid,
                    !exclude_kernel,
                    spec.needs_cpu_pmu,
                    spec.needs_cpu_pmu && cpu_pmu_registered(),
                ),
            })?;
            let id = sys::perf::event_id(fd.as_fd())
                .map_err(|errno| crate::error::Error::syscall(Op::Id, errno))?;
            let page = if options.map_pages {
                Some(MmapPage::map(fd.as_fd())?)
            } else {
                None
            };
            software_ids[i] = spec.software_id();
            events.push(OpenEvent { spec, fd, page, id });
        }
        Ok(Self {
            events,
            software_ids,
            user_reads_off: cfg!(target_arch = "aarch64") && sys::perf_user_access() == Some(0),
            group_format,
            options,
            sentinel: None,
        })
    }

    /// The leaders: the first event of a group, every event when not grouped.
    pub(super) fn leaders(&self) -> &[OpenEvent] {
        if self.options.grouped {
            &self.events[..1]
        } else {
            &self.events
        }
    }

    pub(super) fn ioctl(&self, ioctl: sys::perf::Ioctl, op: Op) -> Result<()> {
        for leader in self.leaders() {
            sys::perf::group_ioctl(leader.fd.as_fd(), ioctl)
                .map_err(|errno| crate::error::Error::syscall(op.clone(), errno))?;
        }
        // A sentinel of its own (ungrouped events) is enabled, disabled and reset with
        // them.
        if let Some(sentinel) = self.sentinel.as_ref().filter(|_| !self.options.grouped) {
            sys::perf::group_ioctl(sentinel.fd.as_fd(), ioctl)
                .map_err(|errno| crate::error::Error::syscall(op.clone(), errno))?;
        }
        Ok(())
    }

    pub(super) fn read(&self) -> Result<GroupRead> {
        if !self.options.grouped {
            return self.read_each();
        }
        if !self.group_format {
            return self.read_one(0);
        }
        let n = self.events.len();
        // The sentinel, a member of the group, comes last in the kernel's answer.
        let members = n + usize::from(self.sentinel.is_some());
        let words = 3 + 2 * members;
        let mut buf = [0u64; 3 + 2 * (MAX_EVENTS + 1)];
        let got = sys::perf::read_u64s(self.events[0].fd.as_fd(), &mut buf[..words])
            .map_err(|errno| crate::error::Error::syscall(Op::Read, errno))?;
        if got < words * 8 {
            return Err(Error::Group(crate::error::GroupError::ShortRead {
                expected: words * 8,
                got,
            }));
        }
        if buf[0] != members as u64 {
            return Err(Error::Group(crate::error::GroupError::Mismatch));
        }
        let mut values = [0u64; MAX_EVENTS];
        for (i, event) in self.events.iter().enumerate() {
            if buf[4 + 2 * i] != event.id {
                return Err(Error::Group(crate::error::GroupError::Mismatch));
            }
            values[i] = buf[3 + 2 * i];
        }
        Ok(GroupRead {
            time_enabled: buf[1],
            time_running: buf[2],
            values,
            times: [(buf[1], buf[2]); MAX_EVENTS],
            len: n,
        })
    }

    /// Ungrouped events: one `read()` each, each with its own times.
    pub(super) fn read_each(&self) -> Result<GroupRead> {
        let mut all = self.read_one(0)?;
        for i in 1..self.events.len() {
            let one = self.read_one(i)?;
            all.values[i] = one.values[0];
            all.times[i] = one.times[0];
        }
        all.len = self.events.len();
        Ok(all)
    }

    /// The reason event `i` needs `read()`, given the page's: a software event is never
    /// on a counter whatever the page says; an arm64 hardware event's index 0 with
    /// perf_user_access = 0 means no user access.
    /// Event `i` read alone (a single-event session, or ungrouped events): `{ value,
    /// time_enabled, time_running, id }` (read_format without GROUP,
    /// include/uapi/linux/perf_event.h).
    pub(super) fn read_one(&self, i: usize) -> Result<GroupRead> {
        let event = &self.events[i];
        let mut buf = [0u64; 4];
        let got = sys::perf::read_u64s(event.fd.as_fd(), &mut buf)
            .map_err(|errno| crate::error::Error::syscall(Op::Read, errno))?;
        if got < size_of_val(&buf) {
            return Err(Error::Group(crate::error::GroupError::ShortRead {
                expected: size_of_val(&buf),
                got,
            }));
        }
        if buf[3] != event.id {
            return Err(Error::Group(crate::error::GroupError::Mismatch));
        }
        let mut values = [0u64; MAX_EVENTS];
        values[0] = buf[0];
        let mut times = [(0, 0); MAX_EVENTS];
        times[0] = (buf[1], buf[2]);
        Ok(GroupRead {
            time_enabled: buf[1],
            time_running: buf[2],
            values,
            times,
            len: 1,
        })
    }

    #[cold]
    pub(super) fn reason(&self, i: usize, fallback: pmu_core::Fallback) -> FallbackReason {
        let software = self.events[i].spec.kind == EventKind::Software;
        FallbackReason::Page(match fallback {
            pmu_core::Fallback::NoUserAccess if software => pmu_core::Fallback::NotScheduled,
            pmu_core::Fallback::NotScheduled if self.user_reads_off && !software => {
                pmu_core::Fallback::NoUserAccess
            }
            other => other,
        })
    }
}

/// The `perf_event_attr` of `spec` as every event of a session starts: its type and
/// config (with the arm64 user-read bit where `user_read`), read as `{ value,
/// time_enabled, time_running, id }`; the caller adds the group format, the filters and
/// the state.
pub(super) fn event_attr(spec: &EventSpec, user_read: bool) -> b::perf_event_attr {
    let mut attr = b::perf_event_attr {
        size: size_of::<b::perf_event_attr>() as u32,
        type_: spec.perf_type,
        ..Default::default()
    };
    let config = if user_read && cfg!(target_arch = "aarch64") {
        spec.config_with_user_read()
    } else {
        spec.config
    };
    attr.config = config[0];
    attr.__bindgen_anon_3.config1 = config[1];
    attr.__bindgen_anon_4.config2 = config[2];
    attr.config3 = config[3];
    attr.read_format = u64::from(
        b::PERF_FORMAT_TOTAL_TIME_ENABLED | b::PERF_FORMAT_TOTAL_TIME_RUNNING | b::PERF_FORMAT_ID,
    );
    attr
}
