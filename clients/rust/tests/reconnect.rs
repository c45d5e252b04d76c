//! Registering again as soon as nrid is back, however long it was away.

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::*;
use nri_grpc::testing::{Nrid, NridOptions};
use nri_grpc::{Exit, Plugin, PluginHandle};
use tokio::sync::watch;
use tracing::field::{Field, Visit};
use tracing::{Event, Metadata, Subscriber, span};

/// A backoff no test waits out: a plugin that registers again within WAIT
/// did not sleep it.
const HOURLY: Duration = Duration::from_secs(3600);

/// One log event of a plugin.
#[derive(Clone, Debug, Default)]
struct Record {
    plugin: String,
    message: String,
    retry: String,
    error: String,
}

impl Visit for Record {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.record_str(f, &format!("{v:?}"));
    }

    fn record_str(&mut self, f: &Field, v: &str) {
        match f.name() {
            "message" => self.message = v.to_owned(),
            "plugin" => self.plugin = v.to_owned(),
            "retry" => self.retry = v.to_owned(),
            "error" => self.error = v.to_owned(),
            _ => {}
        }
    }
}

/// The log events of every plugin of this test binary (a global tracing
/// subscriber: the plugins' tasks run on the runtime's worker threads).
struct Capture(watch::Sender<Vec<Record>>);

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut r = Record::default();
        e.record(&mut r);
        self.0.send_modify(|v| v.push(r));
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

fn records() -> watch::Receiver<Vec<Record>> {
    static CAPTURE: OnceLock<watch::Sender<Vec<Record>>> = OnceLock::new();
    CAPTURE
        .get_or_init(|| {
            let (tx, _) = watch::channel(vec![]);
            tracing::subscriber::set_global_default(Capture(tx.clone())).expect("the only subscriber");
            tx
        })
        .subscribe()
}

/// The number of log events of plugin so far.
fn count(plugin: &str) -> usize {
    records().borrow().iter().filter(|r| r.plugin == plugin).count()
}

/// Waits for a log event of plugin, after its first `since`, that pred
/// accepts.
async fn wait_log(plugin: &str, since: usize, what: &str, pred: impl Fn(&Record) -> bool) -> Record {
    let mut rx = records();
    let find = |v: &Vec<Record>| v.iter().filter(|r| r.plugin == plugin).skip(since).find(|r| pred(r)).cloned();
    let v = tokio::time::timeout(WAIT, rx.wait_for(|v| find(v).is_some()))
        .await
        .unwrap_or_else(|_| panic!("{plugin} did not log {what}"))
        .expect("the capture lives");
    find(&v).unwrap()
}

fn waiting(r: &Record) -> bool {
    r.retry == "when nrid accepts connections"
}

async fn start_registered(nrid: &Nrid, rec: &Recorder, idx: &str, name: &str) -> PluginHandle {
    let p = plugin(nrid, rec, idx, name);
    let h = p.handle();
    tokio::spawn(p.run());
    tokio::time::timeout(WAIT, h.wait_registered()).await.expect("registration");
    h
}

fn plugin(nrid: &Nrid, rec: &Recorder, idx: &str, name: &str) -> Plugin<TestPlugin> {
    let full = format!("{idx}-{name}");
    nrid.plugin_builder(TestPlugin::new(&full, rec, lifecycle()), idx, name).backoff(HOURLY, HOURLY).build().unwrap()
}

/// nrid is killed (its socket file stays, refusing connections) and started
/// again on the same socket, three times: the plugin polls the socket
/// instead of sleeping its (hour-long) backoff, and is back within WAIT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_again_as_soon_as_a_killed_nrid_is_back() {
    records();
    let mut nrid = Nrid::start().await;
    let rec = Recorder::default();
    let h = start_registered(&nrid, &rec, "10", "back").await;
    for _ in 0..3 {
        let first = h.registered().unwrap().instance_id;
        let since = count("10-back");
        nrid.kill().await;
        // Right after a kill the listening socket may outlive the broken
        // connection for a moment: the quick first retry then fails, and the
        // plugin waits.
        wait_log("10-back", since, "that it waits for nrid", waiting).await;
        assert!(nrid.socket.exists());
        nrid.restart().await;
        tokio::time::timeout(WAIT, h.wait_registered_other_than(&first)).await.expect("re-registration");
    }
    h.stop();
}

/// A plugin started while nrid is down registers when nrid listens, without
/// backoff; stopping it while it waits ends run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_when_nrid_appears_and_stops_while_waiting() {
    records();
    let mut nrid = Nrid::start().await;
    nrid.kill().await;
    let rec = Recorder::default();
    let p = plugin(&nrid, &rec, "10", "early");
    let h = p.handle();
    let run = tokio::spawn(p.run());
    let r = wait_log("10-early", 0, "its first failure", waiting).await;
    assert!(r.message.starts_with("registration failed"), "{r:?}");
    nrid.restart().await;
    let reg = tokio::time::timeout(WAIT, h.wait_registered()).await.expect("registration");
    let since = count("10-early");
    nrid.kill().await;
    wait_log("10-early", since, "that it waits for nrid", waiting).await;
    h.stop();
    let exit = tokio::time::timeout(WAIT, run).await.expect("run ended").expect("no panic").expect("run");
    assert_eq!(exit, Exit::Stopped);
    assert!(!reg.instance_id.is_empty());
}

/// nrid's rate limit refuses the identity's second registration
/// (RESOURCE_EXHAUSTED): nrid serves, so the plugin backs off instead of
/// retrying as soon as the socket accepts connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_by_a_serving_nrid_is_retried_after_the_backoff() {
    records();
    let nrid =
        Nrid::start_with(NridOptions { config: Some("[server]\nregister_rate = 0.001\nregister_burst = 1\n".into()) })
            .await;
    let rec = Recorder::default();
    let first = start_registered(&nrid, &rec, "10", "first").await;
    let p = plugin(&nrid, &rec, "11", "limited");
    let h = p.handle();
    tokio::spawn(p.run());
    let r = wait_log("11-limited", 0, "the refusal", |r| r.error.starts_with("ResourceExhausted")).await;
    let secs: f64 =
        r.retry.strip_prefix("in ").and_then(|s| s.strip_suffix('s')).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    assert!(secs >= 1800.0, "{r:?}");
    h.stop();
    first.stop();
}
