//! env-ulimit-injector: an example NRI plugin written with the nri-grpc Rust
//! SDK. It injects environment variables and POSIX resource limits
//! (ulimits) into containers, as pod annotations ask. See README.md.

use std::collections::HashMap;

use nri_grpc::v1beta1::{CreateContainerRequest, CreateContainerResponse};
use nri_grpc::{Adjustment, Context, Event, EventMask, Handler, HandlerError, HandlerResult, effective_annotation};
use tracing::info;

/// The annotation (prefix) of the environment variables to inject.
pub const ENV_KEY: &str = "env.inject.noderesource.dev";
/// The annotation (prefix) of the ulimits to set.
pub const ULIMITS_KEY: &str = "ulimits.inject.noderesource.dev";

/// The resource limits of setrlimit(2), without "RLIMIT_".
const RLIMITS: [&str; 16] = [
    "AS",
    "CORE",
    "CPU",
    "DATA",
    "FSIZE",
    "LOCKS",
    "MEMLOCK",
    "MSGQUEUE",
    "NICE",
    "NOFILE",
    "NPROC",
    "RSS",
    "RTPRIO",
    "RTTIME",
    "SIGPENDING",
    "STACK",
];

/// One environment change: set `name` to `Some(value)`, or remove it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvChange {
    pub name: String,
    pub value: Option<String>,
}

/// One resource limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ulimit {
    /// "RLIMIT_NOFILE".
    pub typ: String,
    pub soft: u64,
    pub hard: u64,
}

fn entries<'a>(value: &'a str, seps: &'a [char]) -> impl Iterator<Item = &'a str> + 'a {
    value.split(|c| c == '\n' || seps.contains(&c)).map(str::trim).filter(|e| !e.is_empty())
}

fn valid_env_name(n: &str) -> bool {
    let mut chars = n.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Parses an env annotation: `NAME=value` sets, `-NAME` removes; entries are
/// separated by newlines or `;`.
pub fn parse_env(value: &str) -> Result<Vec<EnvChange>, String> {
    entries(value, &[';'])
        .map(|e| {
            let (name, val) = match e.strip_prefix('-') {
                Some(name) => (name, None),
                None => match e.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_owned())),
                    None => return Err(format!("{e:?}: want NAME=value or -NAME")),
                },
            };
            if !valid_env_name(name) {
                return Err(format!("{name:?} is not a valid environment variable name"));
            }
            Ok(EnvChange { name: name.to_owned(), value: val })
        })
        .collect()
}

fn parse_limit(v: &str) -> Result<u64, String> {
    match v.trim() {
        "unlimited" | "infinity" => Ok(u64::MAX),
        n => n.parse().map_err(|_| format!("{n:?} is not a number or \"unlimited\"")),
    }
}

/// Parses a ulimits annotation: `TYPE=SOFT:HARD` or `TYPE=LIMIT` (soft and
/// hard), where TYPE is `nofile`, `NOFILE` or `RLIMIT_NOFILE` and a limit
/// is a number or `unlimited`; entries are separated by newlines, `,` or
/// `;`.
pub fn parse_ulimits(value: &str) -> Result<Vec<Ulimit>, String> {
    entries(value, &[',', ';'])
        .map(|e| {
            let (typ, limits) = e.split_once('=').ok_or_else(|| format!("{e:?}: want TYPE=SOFT:HARD"))?;
            let upper = typ.trim().to_ascii_uppercase();
            let short = upper.strip_prefix("RLIMIT_").unwrap_or(&upper);
            if !RLIMITS.contains(&short) {
                return Err(format!("unknown ulimit type {:?}", typ.trim()));
            }
            let (soft, hard) = match limits.split_once(':') {
                Some((s, h)) => (parse_limit(s)?, parse_limit(h)?),
                None => {
                    let l = parse_limit(limits)?;
                    (l, l)
                }
            };
            if soft > hard {
                return Err(format!("ulimit {short}: soft limit {soft} is above the hard limit {hard}"));
            }
            Ok(Ulimit { typ: format!("RLIMIT_{short}"), soft, hard })
        })
        .collect()
}

/// The plugin. It only handles CreateContainer.
#[derive(Default)]
pub struct Injector;

impl Injector {
    /// The adjustment for a container of a pod with `annotations`; a
    /// malformed annotation is an error naming it.
    pub fn adjust(annotations: &HashMap<String, String>, container: &str) -> Result<Adjustment, String> {
        let mut a = Adjustment::new();
        if let Some(v) = effective_annotation(annotations, ENV_KEY, container) {
            for c in parse_env(v).map_err(|e| format!("annotation {ENV_KEY}: {e}"))? {
                match c.value {
                    // Remove first: overrides what the runtime or an earlier
                    // plugin set without a conflict.
                    Some(v) => a.remove_env(&c.name).add_env(c.name, v),
                    None => a.remove_env(&c.name),
                };
            }
        }
        if let Some(v) = effective_annotation(annotations, ULIMITS_KEY, container) {
            for l in parse_ulimits(v).map_err(|e| format!("annotation {ULIMITS_KEY}: {e}"))? {
                a.add_rlimit(l.typ, l.hard, l.soft);
            }
        }
        Ok(a)
    }
}

impl Handler for Injector {
    fn events(&self) -> EventMask {
        EventMask::of(&[Event::CreateContainer])
    }

    /// Injects what the annotations ask; a malformed annotation vetoes the
    /// container (INVALID_ARGUMENT).
    async fn create_container(
        &self,
        _ctx: Context,
        req: CreateContainerRequest,
    ) -> HandlerResult<CreateContainerResponse> {
        let pod = req.pod.unwrap_or_default();
        let ctr = req.container.unwrap_or_default();
        let a = Injector::adjust(&pod.annotations, &ctr.name)
            .map_err(|e| HandlerError::invalid(format!("container {}: {e}", ctr.name)))?;
        let p = a.as_proto();
        if !p.env.is_empty() || !p.rlimits.is_empty() {
            info!(pod = %pod.name, container = %ctr.name, env = p.env.len(), ulimits = p.rlimits.len(), "injecting");
        }
        Ok(a.into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env() {
        assert_eq!(
            parse_env("A=1; B=x=y\n-C\n\n").unwrap(),
            [
                EnvChange { name: "A".into(), value: Some("1".into()) },
                EnvChange { name: "B".into(), value: Some("x=y".into()) },
                EnvChange { name: "C".into(), value: None },
            ]
        );
        assert!(parse_env("1A=1").is_err());
        assert!(parse_env("NOEQUALS").is_err());
        assert!(parse_env("").unwrap().is_empty());
    }

    #[test]
    fn ulimits() {
        assert_eq!(
            parse_ulimits("nofile=1024:4096, RLIMIT_MEMLOCK=unlimited;core=0").unwrap(),
            [
                Ulimit { typ: "RLIMIT_NOFILE".into(), soft: 1024, hard: 4096 },
                Ulimit { typ: "RLIMIT_MEMLOCK".into(), soft: u64::MAX, hard: u64::MAX },
                Ulimit { typ: "RLIMIT_CORE".into(), soft: 0, hard: 0 },
            ]
        );
        assert!(parse_ulimits("nofiles=1").unwrap_err().contains("unknown ulimit type"));
        assert!(parse_ulimits("nofile=10:1").unwrap_err().contains("above the hard limit"));
        assert!(parse_ulimits("nofile=lots").is_err());
        assert!(parse_ulimits("nofile").is_err());
    }

    #[test]
    fn scoping() {
        let a = HashMap::from([
            (format!("{ENV_KEY}/pod"), "POD=1".to_owned()),
            (format!("{ENV_KEY}/container.app"), "APP=1".to_owned()),
            (ULIMITS_KEY.to_owned(), "nofile=8".to_owned()),
        ]);
        let app = Injector::adjust(&a, "app").unwrap().into_proto();
        assert_eq!(app.env.iter().map(|e| e.key.as_str()).collect::<Vec<_>>(), ["-APP", "APP"]);
        assert_eq!(app.rlimits.len(), 1);
        let side = Injector::adjust(&a, "sidecar").unwrap().into_proto();
        assert_eq!(side.env[1].key, "POD");
        assert!(Injector::adjust(&HashMap::new(), "x").unwrap().into_proto().env.is_empty());
    }
}
