//! Selectors, status and resync end to end: the SDK against a real nrid.

use std::sync::Arc;

use nri_grpc::testing::{Nrid, WAIT, pod};
use nri_grpc::v1beta1::admin_service_client::AdminServiceClient;
use nri_grpc::v1beta1::*;
use nri_grpc::{Context, Error, Event, EventMask, Exit, Handler, HandlerResult, Plugin, PluginHandle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What a plugin saw: the pods of its RunPodSandbox calls, and its
/// synchronizations as (epoch, reason, pods).
#[derive(Clone, Default)]
struct Seen {
    pods: Vec<String>,
    syncs: Vec<(u64, SyncReason, Vec<String>)>,
    /// (state, status, reason) of the plugins nrid listed right after the
    /// status was set in the first Synchronize.
    in_sync: Vec<(PluginState, PluginStatus, String)>,
}

struct Rec {
    seen: Arc<watch::Sender<Seen>>,
    /// Reported with set_status from the first Synchronize, before nrid's
    /// Registered.
    ready_in_sync: Option<&'static str>,
    /// Lists nrid's plugins after that.
    admin: Option<AdminServiceClient<tonic::transport::Channel>>,
}

impl Handler for Rec {
    fn events(&self) -> EventMask {
        EventMask::of(&[Event::RunPodSandbox])
    }

    async fn synchronize(&self, ctx: Context, req: SynchronizeRequest) -> HandlerResult<SynchronizeResponse> {
        let pods = req.pods.iter().map(|p| p.id.clone()).collect();
        self.seen.send_modify(|s| s.syncs.push((req.epoch, req.reason(), pods)));
        if let (Some(reason), 1) = (self.ready_in_sync, req.epoch) {
            // Before Registered: sent at once (nrid takes it from Configure
            // on), and again once registered.
            ctx.plugin().set_status(PluginStatus::Ready, reason).await.expect("never fails while registering");
            if let Some(mut admin) = self.admin.clone() {
                let infos = admin.list_plugins(ListPluginsRequest {}).await.expect("ListPlugins").into_inner().plugins;
                let got = infos.into_iter().map(|i| (i.state(), i.status(), i.status_reason)).collect();
                self.seen.send_modify(|s| s.in_sync = got);
            }
        }
        Ok(SynchronizeResponse::default())
    }

    async fn run_pod_sandbox(&self, _: Context, req: RunPodSandboxRequest) -> HandlerResult<RunPodSandboxResponse> {
        let id = req.pod.map(|p| p.id).unwrap_or_default();
        self.seen.send_modify(|s| s.pods.push(id));
        Ok(Default::default())
    }
}

fn rec() -> (Rec, Arc<watch::Sender<Seen>>) {
    let seen = Arc::new(watch::channel(Seen::default()).0);
    (Rec { seen: seen.clone(), ready_in_sync: None, admin: None }, seen)
}

type Run = JoinHandle<Result<Exit, Error>>;

async fn start<H: Handler>(p: Plugin<H>) -> (PluginHandle, Run, Registered) {
    let h = p.handle();
    let run = tokio::spawn(p.run());
    let reg = tokio::time::timeout(WAIT, h.wait_registered()).await.expect("registration");
    (h, run, reg)
}

async fn stop(h: PluginHandle, run: Run) {
    h.stop();
    tokio::time::timeout(WAIT, run).await.expect("run ended").expect("no panic").expect("stopped");
}

fn in_ns(id: &str, ns: &str, labels: &[(&str, &str)]) -> PodSandbox {
    let mut p = pod(id);
    p.namespace = ns.into();
    p.labels = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    p
}

async fn info(nrid: &Nrid, full: &str) -> PluginInfo {
    nrid.plugins()
        .await
        .into_iter()
        .find(|i| i.plugin.as_ref().is_some_and(|p| format!("{}-{}", p.index, p.name) == full))
        .unwrap_or_else(|| panic!("{full} is not registered"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_filter_events_and_are_shown() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let sels = vec![
        EventSelector::new().with_namespaces(["prod"]),
        EventSelector::new().with_namespaces(["staging"]).with_pod_labels("app=web,!canary"),
    ];
    let (sel, sel_seen) = rec();
    let (all, all_seen) = rec();
    let (h1, r1, reg) = start(nrid.plugin_builder(sel, "10", "sel").selectors(sels.clone()).build().unwrap()).await;
    let (h2, r2, _) = start(nrid.plugin_builder(all, "20", "all").build().unwrap()).await;
    assert_eq!(reg.selectors, sels);
    assert_eq!(info(&nrid, "10-sel").await.selectors, sels);
    assert!(info(&nrid, "20-all").await.selectors.is_empty());

    for p in [
        pod("p-default"),
        in_ns("p-prod", "prod", &[]),
        in_ns("p-web", "staging", &[("app", "web")]),
        in_ns("p-canary", "staging", &[("app", "web"), ("canary", "1")]),
    ] {
        nrid.run_pod_sandbox(p).await.unwrap();
    }
    assert_eq!(sel_seen.borrow().pods, ["p-prod", "p-web"]);
    assert_eq!(all_seen.borrow().pods.len(), 4);
    assert_eq!(info(&nrid, "10-sel").await.counters.unwrap().filtered, 2);
    stop(h1, r1).await;
    stop(h2, r2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_label_selector_is_refused_for_good() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let (r, _) = rec();
    let p = nrid
        .plugin_builder(r, "10", "badsel")
        .selector(EventSelector::new().with_pod_labels("app in (a,"))
        .build()
        .unwrap();
    let res = tokio::time::timeout(WAIT, p.run()).await.expect("run ended");
    match res {
        Err(Error::Refused(st)) => {
            assert_eq!(nri_grpc::rpc::reason(&st), "REGISTRATION_REFUSAL_INVALID_SELECTORS");
            assert!(st.message().contains("pod_labels"), "{}", st.message());
        }
        other => panic!("not refused: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_shown_and_kept_across_an_nrid_restart() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let (r, _) = rec();
    let p = nrid.plugin_builder(r, "10", "st").status(PluginStatus::NotReady, "warming up").build().unwrap();
    let (h, run, reg) = start(p).await;
    let status = |i: PluginInfo| (i.status(), i.status_reason);
    assert_eq!(status(info(&nrid, "10-st").await), (PluginStatus::NotReady, "warming up".into()));
    for (s, reason) in [
        (PluginStatus::Ready, "warm"),
        (PluginStatus::Degraded, "backend slow"),
        (PluginStatus::NotReady, "backend down"),
    ] {
        h.set_status(s, reason).await.unwrap();
        assert_eq!(status(info(&nrid, "10-st").await), (s, reason.into()));
    }

    // nrid restarts: the plugin registers again, NOT_READY still.
    nrid.restart().await;
    let reg2 = tokio::time::timeout(WAIT, h.wait_registered_other_than(&reg.instance_id)).await.expect("again");
    assert_ne!(reg2.instance_id, reg.instance_id);
    assert_eq!(status(info(&nrid, "10-st").await), (PluginStatus::NotReady, "backend down".into()));
    stop(h, run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_set_during_the_first_synchronize_reaches_nrid() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let (mut r, seen) = rec();
    r.ready_in_sync = Some("cache loaded");
    r.admin = Some(nrid.admin());
    let p = nrid.plugin_builder(r, "10", "warm").status(PluginStatus::NotReady, "").build().unwrap();
    let (h, run, _) = start(p).await;
    // In effect while the plugin was still synchronizing.
    assert_eq!(seen.borrow().in_sync, [(PluginState::Synchronizing, PluginStatus::Ready, "cache loaded".to_owned())]);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let i = info(&nrid, "10-warm").await;
        if (i.status(), i.status_reason.as_str()) == (PluginStatus::Ready, "cache loaded") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the status never reached nrid:\n{}", nrid.logs());
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    stop(h, run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_resync_brings_a_synchronize_with_the_epoch() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![pod("p0")], vec![]).await;
    let (r, seen) = rec();
    let (h, run, _) = start(nrid.plugin_builder(r, "10", "rs").build().unwrap()).await;
    let epoch = h.request_resync("lost my cache").await.unwrap();
    assert!(epoch >= 2, "{epoch}");
    let mut rx = seen.subscribe();
    let got = tokio::time::timeout(WAIT, rx.wait_for(|s| s.syncs.iter().any(|x| x.0 == epoch)))
        .await
        .expect("the requested resync")
        .unwrap()
        .clone();
    let sync = got.syncs.iter().find(|x| x.0 == epoch).unwrap();
    assert_eq!((sync.1, &sync.2[..]), (SyncReason::PluginRequested, &["p0".to_owned()][..]));
    assert_eq!(info(&nrid, "10-rs").await.counters.unwrap().requested_resyncs, 1);
    stop(h, run).await;
}
