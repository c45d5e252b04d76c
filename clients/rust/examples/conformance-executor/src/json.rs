//! The protobuf JSON of the RegisterPluginRequest in
//! `NRI_CONFORMANCE_REGISTRATION`: a small JSON reader for the fields an
//! executor needs (the crate has no JSON dependency).

use std::collections::BTreeMap;

use nri_grpc::v1beta1::{
    Capabilities, Event, EventSelector, EventTimeout, PluginStatus, RegisterPluginRequest, Timeouts,
};

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Value>),
    Object(BTreeMap<String, Value>),
}

struct Reader<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at byte {}", c as char, self.pos))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > 32 {
            return Err("nested too deeply".into());
        }
        self.ws();
        match self.s.get(self.pos) {
            Some(b'{') => {
                self.pos += 1;
                let mut m = BTreeMap::new();
                self.ws();
                if self.s.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                    return Ok(Value::Object(m));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.eat(b':')?;
                    let v = self.value(depth + 1)?;
                    m.insert(k, v);
                    self.ws();
                    match self.s.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Value::Object(m));
                        }
                        _ => return Err(format!("expected ',' or '}}' at byte {}", self.pos)),
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                    return Ok(Value::Array(a));
                }
                loop {
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Value::Array(a));
                        }
                        _ => return Err(format!("expected ',' or ']' at byte {}", self.pos)),
                    }
                }
            }
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(_) => {
                let start = self.pos;
                while self.pos < self.s.len() && !b",]} \t\r\n".contains(&self.s[self.pos]) {
                    self.pos += 1;
                }
                let w = std::str::from_utf8(&self.s[start..self.pos]).map_err(|e| e.to_string())?;
                match w {
                    "null" => Ok(Value::Null),
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    _ => w.parse().map(Value::Number).map_err(|_| format!("bad literal at byte {start}")),
                }
            }
            None => Err("unexpected end".into()),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.s.get(self.pos) != Some(&b'"') {
            return Err(format!("expected a string at byte {}", self.pos));
        }
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let c = *self.s.get(self.pos).ok_or("unterminated string")?;
            self.pos += 1;
            match c {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let e = *self.s.get(self.pos).ok_or("unterminated escape")?;
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let h = self.s.get(self.pos..self.pos + 4).ok_or("short \\u escape")?;
                            self.pos += 4;
                            let n = u32::from_str_radix(std::str::from_utf8(h).map_err(|e| e.to_string())?, 16)
                                .map_err(|e| e.to_string())?;
                            let ch = char::from_u32(n).unwrap_or('\u{fffd}');
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
    }
}

fn parse(s: &str) -> Result<Value, String> {
    let mut r = Reader { s: s.as_bytes(), pos: 0 };
    let v = r.value(0)?;
    r.ws();
    if r.pos != r.s.len() {
        return Err(format!("trailing data at byte {}", r.pos));
    }
    Ok(v)
}

/// A field by its JSON name or its proto name.
fn field<'a>(m: &'a BTreeMap<String, Value>, json: &str, proto: &str) -> Option<&'a Value> {
    m.get(json).or_else(|| m.get(proto))
}

fn string(m: &BTreeMap<String, Value>, json: &str, proto: &str) -> String {
    match field(m, json, proto) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn uint(m: &BTreeMap<String, Value>, json: &str, proto: &str) -> Result<u32, String> {
    match field(m, json, proto) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) if *n >= 0.0 && *n <= f64::from(u32::MAX) => Ok(*n as u32),
        Some(Value::String(s)) => s.parse().map_err(|_| format!("{json}: {s:?} is not a uint32")),
        Some(v) => Err(format!("{json}: {v:?} is not a uint32")),
    }
}

fn boolean(m: &BTreeMap<String, Value>, json: &str, proto: &str) -> bool {
    matches!(field(m, json, proto), Some(Value::Bool(true)))
}

/// A google.protobuf.Duration in JSON ("1.5s").
fn duration(v: Option<&Value>) -> Result<Option<prost_types::Duration>, String> {
    let s = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s,
        Some(v) => return Err(format!("duration {v:?} is not a string")),
    };
    let secs: f64 = s.strip_suffix('s').and_then(|n| n.parse().ok()).ok_or_else(|| format!("bad duration {s:?}"))?;
    let nanos = (secs * 1e9).round() as i64;
    Ok(Some(prost_types::Duration { seconds: nanos / 1_000_000_000, nanos: (nanos % 1_000_000_000) as i32 }))
}

/// A list of strings (absent or null: empty).
fn strings(m: &BTreeMap<String, Value>, json: &str, proto: &str) -> Result<Vec<String>, String> {
    match field(m, json, proto) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                v => Err(format!("{json}: {v:?} is not a string")),
            })
            .collect(),
        Some(v) => Err(format!("{json}: {v:?} is not a list")),
    }
}

/// The EventSelector list (`selectors`).
fn selectors(v: Option<&Value>) -> Result<Vec<EventSelector>, String> {
    let a = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(v) => return Err(format!("selectors: {v:?} is not a list")),
    };
    a.iter()
        .map(|s| {
            let Value::Object(s) = s else { return Err("selectors: not an object".to_owned()) };
            Ok(EventSelector {
                namespaces: strings(s, "namespaces", "namespaces")?,
                pod_labels: string(s, "podLabels", "pod_labels"),
                container_names: strings(s, "containerNames", "container_names")?,
                runtime_handlers: strings(s, "runtimeHandlers", "runtime_handlers")?,
            })
        })
        .collect()
}

/// A PluginStatus by enum name or number (absent: unspecified).
fn status(v: Option<&Value>) -> Result<i32, String> {
    match v {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(n)) => {
            PluginStatus::from_str_name(n).map(|s| s as i32).ok_or_else(|| format!("unknown status {n:?}"))
        }
        Some(Value::Number(n)) if n.fract() == 0.0 && PluginStatus::try_from(*n as i32).is_ok() => Ok(*n as i32),
        Some(v) => Err(format!("status {v:?} is not a PluginStatus")),
    }
}

/// Reads the RegisterPluginRequest fields an executor registers with:
/// plugin_name, plugin_idx, capabilities, timeouts, selectors, status and
/// status_reason.
pub fn registration(s: &str) -> Result<RegisterPluginRequest, String> {
    let Value::Object(m) = parse(s)? else {
        return Err("not a JSON object".into());
    };
    let mut r = RegisterPluginRequest {
        plugin_name: string(&m, "pluginName", "plugin_name"),
        plugin_idx: string(&m, "pluginIdx", "plugin_idx"),
        selectors: selectors(field(&m, "selectors", "selectors"))?,
        status: status(field(&m, "status", "status"))?,
        status_reason: string(&m, "statusReason", "status_reason"),
        ..Default::default()
    };
    if let Some(Value::Object(c)) = field(&m, "capabilities", "capabilities") {
        r.capabilities = Some(Capabilities {
            max_concurrent_calls: uint(c, "maxConcurrentCalls", "max_concurrent_calls")?,
            dry_run: boolean(c, "dryRun", "dry_run"),
            max_message_size: uint(c, "maxMessageSize", "max_message_size")?,
            resync: boolean(c, "resync", "resync"),
        });
    }
    if let Some(Value::Object(t)) = field(&m, "timeouts", "timeouts") {
        let mut events = Vec::new();
        if let Some(Value::Array(a)) = field(t, "events", "events") {
            for e in a {
                let Value::Object(e) = e else { return Err("timeouts.events: not an object".into()) };
                let event = match field(e, "event", "event") {
                    Some(Value::String(n)) => {
                        Event::from_str_name(n).ok_or_else(|| format!("unknown event {n:?}"))? as i32
                    }
                    Some(Value::Number(n)) => *n as i32,
                    _ => 0,
                };
                events.push(EventTimeout { event, timeout: duration(field(e, "timeout", "timeout"))? });
            }
        }
        r.timeouts = Some(Timeouts {
            request: duration(field(t, "request", "request"))?,
            events,
            synchronize: duration(field(t, "synchronize", "synchronize"))?,
        });
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_registration() {
        let r = registration(
            r#"{"pluginName":"a\"b", "pluginIdx":"10", "capabilities":{"maxConcurrentCalls":4, "dryRun":true,
                "maxMessageSize":65536}, "timeouts":{"request":"1.500s", "events":[{"event":"EVENT_CREATE_CONTAINER",
                "timeout":"30s"}]}}"#,
        )
        .unwrap();
        assert_eq!(r.plugin_name, "a\"b");
        assert_eq!(r.plugin_idx, "10");
        let c = r.capabilities.unwrap();
        assert_eq!((c.max_concurrent_calls, c.dry_run, c.max_message_size, c.resync), (4, true, 65536, false));
        let t = r.timeouts.unwrap();
        assert_eq!(t.request, Some(prost_types::Duration { seconds: 1, nanos: 500_000_000 }));
        assert_eq!(t.events[0].event, Event::CreateContainer as i32);
        assert_eq!(t.events[0].timeout, Some(prost_types::Duration { seconds: 30, nanos: 0 }));
        assert!(t.synchronize.is_none());
        assert!(r.selectors.is_empty());
        assert_eq!(r.status, 0);
        assert!(registration("[1]").is_err());
        assert!(registration(r#"{"pluginName": }"#).is_err());
    }

    #[test]
    fn reads_selectors_and_status() {
        // Canonical JSON names, as protojson writes them.
        let r = registration(
            r#"{"pluginName":"sel","pluginIdx":"10","selectors":[{"namespaces":["team-a","team-b"],
                "podLabels":"app in (web, api), !legacy","containerNames":["keep*"]},{"runtimeHandlers":["kata"]}],
                "status":"PLUGIN_STATUS_NOT_READY","statusReason":"warming \"up\""}"#,
        )
        .unwrap();
        assert_eq!(
            r.selectors,
            vec![
                EventSelector {
                    namespaces: vec!["team-a".into(), "team-b".into()],
                    pod_labels: "app in (web, api), !legacy".into(),
                    container_names: vec!["keep*".into()],
                    runtime_handlers: vec![],
                },
                EventSelector { runtime_handlers: vec!["kata".into()], ..Default::default() },
            ]
        );
        assert_eq!(r.status, PluginStatus::NotReady as i32);
        assert_eq!(r.status_reason, "warming \"up\"");
        // Proto names, and the enum by number.
        let r = registration(
            r#"{"selectors":[{"pod_labels":"tier=db","container_names":["a?"],"runtime_handlers":["runc"]}],
                "status":3,"status_reason":"half"}"#,
        )
        .unwrap();
        assert_eq!(
            r.selectors,
            vec![EventSelector {
                pod_labels: "tier=db".into(),
                container_names: vec!["a?".into()],
                runtime_handlers: vec!["runc".into()],
                ..Default::default()
            }]
        );
        assert_eq!(r.status, PluginStatus::Degraded as i32);
        assert_eq!(r.status_reason, "half");
        // Wrong shapes are errors, not silently empty selectors.
        assert!(registration(r#"{"selectors":{"namespaces":["a"]}}"#).is_err());
        assert!(registration(r#"{"selectors":["a"]}"#).is_err());
        assert!(registration(r#"{"selectors":[{"namespaces":"a"}]}"#).is_err());
        assert!(registration(r#"{"selectors":[{"namespaces":[1]}]}"#).is_err());
        assert!(registration(r#"{"status":"PLUGIN_STATUS_SLEEPY"}"#).is_err());
        assert!(registration(r#"{"status":9}"#).is_err());
    }
}
