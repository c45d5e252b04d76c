//! Event selectors and plugin status: building and checking them against the
//! protocol's bounds (docs/PROTOCOL.md).

use crate::v1beta1::{EventSelector, PluginStatus};

/// At most this many selectors per registration.
pub const MAX_SELECTORS: usize = 16;
/// At most this many entries in each list of a selector.
pub const MAX_SELECTOR_ENTRIES: usize = 64;
/// At most this many bytes per list entry (namespace, pattern, handler).
pub const MAX_SELECTOR_ENTRY_BYTES: usize = 253;
/// At most this many bytes of a pod label selector.
pub const MAX_POD_LABELS_BYTES: usize = 4096;
/// At most this many bytes of a status or resync reason.
pub const MAX_REASON_BYTES: usize = 1024;

/// Building an [`EventSelector`]: every field given must match (AND); a list
/// matches when any of its entries does (OR).
///
/// ```
/// use nri_grpc::v1beta1::EventSelector;
///
/// let web = EventSelector::new().with_namespaces(["prod", "staging"]).with_pod_labels("app=web,!canary");
/// let dbs = EventSelector::new().with_container_names(["db-*"]).with_runtime_handlers(["", "kata"]);
/// assert_eq!(web.namespaces, ["prod", "staging"]);
/// # let _ = dbs;
/// ```
impl EventSelector {
    /// An empty selector (it matches everything until a field is set).
    pub fn new() -> Self {
        Self::default()
    }

    /// Pod namespaces, matched exactly (added to those already set).
    pub fn with_namespaces<I: IntoIterator<Item = S>, S: Into<String>>(mut self, namespaces: I) -> Self {
        self.namespaces.extend(namespaces.into_iter().map(Into::into));
        self
    }

    /// A pod label selector in Kubernetes syntax (`app=web,tier in (a,b),!canary`);
    /// nrid checks its syntax (a bad one refuses the registration with
    /// `REGISTRATION_REFUSAL_INVALID_SELECTORS`).
    pub fn with_pod_labels(mut self, selector: impl Into<String>) -> Self {
        self.pod_labels = selector.into();
        self
    }

    /// Container name patterns: `*` matches any run of characters, `?` one
    /// character (added to those already set). Pod events are not filtered
    /// by container names.
    pub fn with_container_names<I: IntoIterator<Item = S>, S: Into<String>>(mut self, patterns: I) -> Self {
        self.container_names.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Runtime handlers, matched exactly; `""` is the runtime's default
    /// handler (added to those already set).
    pub fn with_runtime_handlers<I: IntoIterator<Item = S>, S: Into<String>>(mut self, handlers: I) -> Self {
        self.runtime_handlers.extend(handlers.into_iter().map(Into::into));
        self
    }
}

/// Checks selectors against the protocol's bounds: at most 16 selectors, at
/// most 64 entries of at most 253 bytes per list, a label selector of at
/// most 4096 bytes. The error names the selector, the field and the rule.
pub fn check_selectors(selectors: &[EventSelector]) -> Result<(), String> {
    if selectors.len() > MAX_SELECTORS {
        return Err(format!("selectors: {} selectors, at most {MAX_SELECTORS} are allowed", selectors.len()));
    }
    for (i, s) in selectors.iter().enumerate() {
        for (name, entries) in [
            ("namespaces", &s.namespaces),
            ("container_names", &s.container_names),
            ("runtime_handlers", &s.runtime_handlers),
        ] {
            if entries.len() > MAX_SELECTOR_ENTRIES {
                return Err(format!(
                    "selectors[{i}].{name}: {} entries, at most {MAX_SELECTOR_ENTRIES} are allowed",
                    entries.len()
                ));
            }
            if let Some((j, e)) = entries.iter().enumerate().find(|(_, e)| e.len() > MAX_SELECTOR_ENTRY_BYTES) {
                return Err(format!(
                    "selectors[{i}].{name}[{j}]: {} bytes, at most {MAX_SELECTOR_ENTRY_BYTES} are allowed",
                    e.len()
                ));
            }
        }
        if s.pod_labels.len() > MAX_POD_LABELS_BYTES {
            return Err(format!(
                "selectors[{i}].pod_labels: {} bytes, at most {MAX_POD_LABELS_BYTES} are allowed",
                s.pod_labels.len()
            ));
        }
    }
    Ok(())
}

/// Checks a status or resync reason: at most 1024 bytes (a `String` is
/// UTF-8 already).
pub(crate) fn check_reason(what: &str, reason: &str) -> Result<(), String> {
    if reason.len() > MAX_REASON_BYTES {
        return Err(format!("{what}: {} bytes, at most {MAX_REASON_BYTES} are allowed", reason.len()));
    }
    Ok(())
}

/// READY for UNSPECIFIED (the protocol's meaning), the status otherwise.
pub(crate) fn normalize(status: PluginStatus) -> PluginStatus {
    match status {
        PluginStatus::Unspecified => PluginStatus::Ready,
        s => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_selectors() {
        let s = EventSelector::new()
            .with_namespaces(["a"])
            .with_namespaces(vec!["b".to_owned()])
            .with_pod_labels("app=web")
            .with_container_names(["db-*"])
            .with_runtime_handlers([""]);
        assert_eq!(s.namespaces, ["a", "b"]);
        assert_eq!(
            (s.pod_labels.as_str(), &s.container_names[..], &s.runtime_handlers[..]),
            ("app=web", &["db-*".to_owned()][..], &[String::new()][..])
        );
        assert_eq!(EventSelector::new(), EventSelector::default());
    }

    #[test]
    fn selector_bounds() {
        assert!(check_selectors(&vec![EventSelector::new(); 16]).is_ok());
        assert_eq!(
            check_selectors(&vec![EventSelector::new(); 17]).unwrap_err(),
            "selectors: 17 selectors, at most 16 are allowed"
        );
        let many = EventSelector::new().with_namespaces((0..65).map(|i| i.to_string()));
        assert_eq!(
            check_selectors(&[many]).unwrap_err(),
            "selectors[0].namespaces: 65 entries, at most 64 are allowed"
        );
        let long = EventSelector::new().with_container_names(["ok".to_owned(), "x".repeat(254)]);
        assert_eq!(
            check_selectors(&[EventSelector::new(), long]).unwrap_err(),
            "selectors[1].container_names[1]: 254 bytes, at most 253 are allowed"
        );
        let labels = EventSelector::new().with_pod_labels("a".repeat(4097));
        assert_eq!(
            check_selectors(&[labels]).unwrap_err(),
            "selectors[0].pod_labels: 4097 bytes, at most 4096 are allowed"
        );
        assert!(check_reason("reason", &"x".repeat(1024)).is_ok());
        assert_eq!(
            check_reason("reason", &"é".repeat(513)).unwrap_err(),
            "reason: 1026 bytes, at most 1024 are allowed"
        );
        assert_eq!(normalize(PluginStatus::Unspecified), PluginStatus::Ready);
        assert_eq!(normalize(PluginStatus::Degraded), PluginStatus::Degraded);
    }
}
