//! Event subscription masks.

use crate::v1beta1::Event;

/// Every event bit: the 14 events, validation included (`0x3FFF`).
const ALL_BITS: i32 = 0x3FFF;

/// A set of events: the subscription mask of `ConfigureResponse.events`,
/// where event `e` is bit `1 << (e - 1)`.
///
/// Unlike the wire mask, an empty `EventMask` means no event: the SDK never
/// sends 0 (which nrid reads as "every event, validation included").
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventMask(i32);

impl EventMask {
    /// No event.
    pub const fn empty() -> Self {
        EventMask(0)
    }

    /// Every event except `ValidateContainerAdjustment`.
    pub const fn all_lifecycle() -> Self {
        EventMask(ALL_BITS & !Self::bit(Event::ValidateContainerAdjustment))
    }

    /// The events in `events`.
    pub const fn of(events: &[Event]) -> Self {
        let mut m = 0;
        let mut i = 0;
        while i < events.len() {
            m |= Self::bit(events[i]);
            i += 1;
        }
        EventMask(m)
    }

    /// The mask with `e` added.
    pub const fn with(self, e: Event) -> Self {
        EventMask(self.0 | Self::bit(e))
    }

    /// The mask bit of `e`, 0 for `Unspecified` and `Last`.
    pub const fn bit(e: Event) -> i32 {
        let n = e as i32;
        if n >= 1 && n <= 14 { 1 << (n - 1) } else { 0 }
    }

    /// A mask from its wire value. Bits outside the 14 events are dropped;
    /// 0 stays empty (it does not mean "every event" here).
    pub const fn from_bits(bits: i32) -> Self {
        EventMask(bits & ALL_BITS)
    }

    /// The wire value.
    pub const fn bits(self) -> i32 {
        self.0
    }

    /// Whether the mask holds `e`.
    pub const fn contains(self, e: Event) -> bool {
        let b = Self::bit(e);
        b != 0 && self.0 & b == b
    }

    /// Whether the mask is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every event of `other` is in `self`.
    pub const fn is_superset_of(self, other: EventMask) -> bool {
        other.0 & !self.0 == 0
    }

    /// The events of the mask, in event-number order.
    pub fn events(self) -> Vec<Event> {
        (1..=14).filter_map(|n| Event::try_from(n).ok()).filter(|e| self.contains(*e)).collect()
    }
}

impl std::ops::BitOr for EventMask {
    type Output = EventMask;
    fn bitor(self, rhs: EventMask) -> EventMask {
        EventMask(self.0 | rhs.0)
    }
}

impl From<Event> for EventMask {
    fn from(e: Event) -> Self {
        EventMask::of(&[e])
    }
}

impl FromIterator<Event> for EventMask {
    fn from_iter<I: IntoIterator<Item = Event>>(iter: I) -> Self {
        iter.into_iter().fold(EventMask::empty(), EventMask::with)
    }
}

impl std::fmt::Debug for EventMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.events().into_iter().map(event_name).collect();
        write!(f, "EventMask({:#x}: {})", self.0, names.join(","))
    }
}

/// The short name of an event: the name of its `PluginService` method
/// ("CreateContainer" for `Event::CreateContainer`).
pub fn event_name(e: Event) -> &'static str {
    match e {
        Event::Unspecified => "Unspecified",
        Event::RunPodSandbox => "RunPodSandbox",
        Event::StopPodSandbox => "StopPodSandbox",
        Event::RemovePodSandbox => "RemovePodSandbox",
        Event::CreateContainer => "CreateContainer",
        Event::PostCreateContainer => "PostCreateContainer",
        Event::StartContainer => "StartContainer",
        Event::PostStartContainer => "PostStartContainer",
        Event::UpdateContainer => "UpdateContainer",
        Event::PostUpdateContainer => "PostUpdateContainer",
        Event::StopContainer => "StopContainer",
        Event::RemoveContainer => "RemoveContainer",
        Event::UpdatePodSandbox => "UpdatePodSandbox",
        Event::PostUpdatePodSandbox => "PostUpdatePodSandbox",
        Event::ValidateContainerAdjustment => "ValidateContainerAdjustment",
        Event::Last => "Last",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits() {
        assert_eq!(EventMask::bit(Event::RunPodSandbox), 0x1);
        assert_eq!(EventMask::bit(Event::CreateContainer), 0x8);
        assert_eq!(EventMask::bit(Event::ValidateContainerAdjustment), 0x2000);
        assert_eq!(EventMask::bit(Event::Unspecified), 0);
        assert_eq!(EventMask::bit(Event::Last), 0);
        assert_eq!(EventMask::all_lifecycle().bits(), 0x1FFF);
        let m = EventMask::of(&[Event::CreateContainer, Event::StopContainer]);
        assert_eq!(m.bits(), 0x208);
        assert!(m.contains(Event::StopContainer) && !m.contains(Event::RunPodSandbox));
        assert_eq!(m.events(), vec![Event::CreateContainer, Event::StopContainer]);
        assert!(m.is_superset_of(EventMask::of(&[Event::CreateContainer])));
        assert!(!m.is_superset_of(EventMask::of(&[Event::RunPodSandbox])));
        assert_eq!(EventMask::from_bits(-1).bits(), 0x3FFF);
        assert_eq!(format!("{m:?}"), "EventMask(0x208: CreateContainer,StopContainer)");
    }
}
