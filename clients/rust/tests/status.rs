//! Selectors, status and resync: what the SDK sends, against a small fake
//! RuntimeService that records every request and its metadata (end-to-end
//! tests against nrid are in selectors_e2e.rs).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nri_grpc::v1beta1::register_plugin_response::Message as RegisterMessage;
use nri_grpc::v1beta1::runtime_service_server::{RuntimeService, RuntimeServiceServer};
use nri_grpc::v1beta1::*;
use nri_grpc::{Error, Event, EventMask, Handler, Plugin, PluginHandle};
use tokio::sync::{mpsc, oneshot, watch};
use tonic::{Request, Response, Status};

const WAIT: Duration = Duration::from_secs(30);

#[derive(Default, Clone)]
struct Seen {
    registrations: Vec<RegisterPluginRequest>,
    /// (nri-instance-id, status, reason)
    statuses: Vec<(String, PluginStatus, String)>,
    /// (nri-instance-id, reason)
    resyncs: Vec<(String, String)>,
}

/// RuntimeService that registers every plugin at once (no Configure, no
/// Synchronize: the SDK takes the instance id of Registered), records
/// requests with their nri-instance-id, and ends a registration when told.
#[derive(Clone)]
struct Fake {
    seen: Arc<watch::Sender<Seen>>,
    /// Registered is sent only while this is true.
    release: Arc<watch::Sender<bool>>,
    ends: Arc<Mutex<HashMap<String, oneshot::Sender<()>>>>,
}

fn instance_of<T>(r: &Request<T>) -> String {
    r.metadata().get("nri-instance-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

#[tonic::async_trait]
impl RuntimeService for Fake {
    type RegisterPluginStream = tokio_stream::wrappers::ReceiverStream<Result<RegisterPluginResponse, Status>>;

    async fn register_plugin(
        &self,
        r: Request<RegisterPluginRequest>,
    ) -> Result<Response<Self::RegisterPluginStream>, Status> {
        let req = r.into_inner();
        let mut n = 0;
        self.seen.send_modify(|s| {
            s.registrations.push(req.clone());
            n = s.registrations.len();
        });
        let inst = format!("inst-{n}");
        let (end_tx, end_rx) = oneshot::channel();
        self.ends.lock().unwrap().insert(inst.clone(), end_tx);
        let (tx, rx) = mpsc::channel(1);
        let mut release = self.release.subscribe();
        tokio::spawn(async move {
            let _ = release.wait_for(|r| *r).await;
            let reg = Registered { instance_id: inst, events: 0x3FFF, selectors: req.selectors, ..Default::default() };
            let _ = tx.send(Ok(RegisterPluginResponse { message: Some(RegisterMessage::Registered(reg)) })).await;
            let _ = end_rx.await; // dropping tx ends the stream
        });
        Ok(Response::new(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn update_containers(
        &self,
        _: Request<UpdateContainersRequest>,
    ) -> Result<Response<UpdateContainersResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn set_plugin_status(
        &self,
        r: Request<SetPluginStatusRequest>,
    ) -> Result<Response<SetPluginStatusResponse>, Status> {
        let inst = instance_of(&r);
        let req = r.into_inner();
        self.seen.send_modify(|s| s.statuses.push((inst, req.status(), req.reason)));
        Ok(Response::new(SetPluginStatusResponse {}))
    }

    async fn request_resync(
        &self,
        r: Request<RequestResyncRequest>,
    ) -> Result<Response<RequestResyncResponse>, Status> {
        let inst = instance_of(&r);
        let reason = r.into_inner().reason;
        let mut n = 0;
        self.seen.send_modify(|s| {
            s.resyncs.push((inst, reason));
            n = s.resyncs.len();
        });
        Ok(Response::new(RequestResyncResponse { epoch: 6 + n as u64 }))
    }
}

struct Fixture {
    fake: Fake,
    dir: PathBuf,
    sock: PathBuf,
}

impl Fixture {
    async fn start() -> Fixture {
        let dir = std::env::temp_dir().join(format!("nri-rs-st-{}-{}", std::process::id(), rand_suffix()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("rt.sock");
        let fake = Fake {
            seen: Arc::new(watch::channel(Seen::default()).0),
            release: Arc::new(watch::channel(true).0),
            ends: Arc::default(),
        };
        let listener = tokio::net::UnixListener::bind(&sock).unwrap();
        let svc = RuntimeServiceServer::new(fake.clone());
        tokio::spawn(async move {
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            let _ = tonic::transport::Server::builder().serve_with_incoming(svc, incoming).await;
        });
        Fixture { fake, dir, sock }
    }

    fn plugin(&self) -> nri_grpc::PluginBuilder<Noop> {
        Plugin::builder(Noop)
            .name("st")
            .index("10")
            .use_env(false)
            .server_address(self.sock.to_str().unwrap())
            .socket_dir(self.dir.join("plugins").to_str().unwrap())
            .backoff(Duration::from_millis(50), Duration::from_millis(500))
    }

    fn seen(&self) -> Seen {
        self.fake.seen.borrow().clone()
    }

    async fn wait_seen(&self, what: &str, f: impl Fn(&Seen) -> bool) -> Seen {
        let mut rx = self.fake.seen.subscribe();
        match tokio::time::timeout(WAIT, rx.wait_for(|s| f(s))).await {
            Ok(Ok(s)) => s.clone(),
            _ => panic!("timed out waiting for {what}"),
        }
    }

    fn end(&self, instance: &str) {
        let _ = self.fake.ends.lock().unwrap().remove(instance).expect("a registration").send(());
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

struct Noop;

impl Handler for Noop {
    fn events(&self) -> EventMask {
        EventMask::of(&[Event::CreateContainer])
    }
}

async fn registered_as(h: &PluginHandle, instance: &str) -> Registered {
    let mut rx = h.watch_registration();
    let r = tokio::time::timeout(WAIT, rx.wait_for(|r| r.as_ref().is_some_and(|r| r.instance_id == instance)))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for registration {instance}"))
        .unwrap();
    r.clone().unwrap()
}

fn selectors() -> Vec<EventSelector> {
    vec![
        EventSelector::new().with_namespaces(["prod", "staging"]).with_pod_labels("app=web,!canary"),
        EventSelector::new().with_container_names(["db-*"]).with_runtime_handlers(["", "kata"]),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_carries_selectors_and_status_and_reports_go_to_the_instance() {
    let f = Fixture::start().await;
    let plugin = f.plugin().selectors(selectors()).status(PluginStatus::NotReady, "warming up").build().unwrap();
    assert_eq!(plugin.selectors(), selectors());
    let h = plugin.handle();
    let run = tokio::spawn(plugin.run());

    let reg = registered_as(&h, "inst-1").await;
    assert_eq!(reg.selectors, selectors());
    let req = &f.seen().registrations[0];
    assert_eq!(req.selectors, selectors());
    assert_eq!((req.status(), req.status_reason.as_str()), (PluginStatus::NotReady, "warming up"));

    h.set_status(PluginStatus::Ready, "warm").await.unwrap();
    assert_eq!(h.request_resync("cache lost").await.unwrap(), 7);
    h.set_status(PluginStatus::Degraded, "db slow").await.unwrap();
    h.set_status(PluginStatus::NotReady, "db down").await.unwrap();
    let seen = f.seen();
    let st = |i: &str, s, r: &str| (i.to_owned(), s, r.to_owned());
    assert_eq!(
        seen.statuses,
        [
            st("inst-1", PluginStatus::Ready, "warm"),
            st("inst-1", PluginStatus::Degraded, "db slow"),
            st("inst-1", PluginStatus::NotReady, "db down")
        ]
    );
    assert_eq!(seen.resyncs, [("inst-1".to_owned(), "cache lost".to_owned())]);
    assert_eq!(h.status(), (PluginStatus::NotReady, "db down".to_owned()));

    // nrid ends the registration (a restart): the plugin registers again
    // with the last status it reported, and its selectors.
    f.end("inst-1");
    registered_as(&h, "inst-2").await;
    let req = &f.seen().registrations[1];
    assert_eq!((req.status(), req.status_reason.as_str()), (PluginStatus::NotReady, "db down"));
    assert_eq!(req.selectors, selectors());
    assert_eq!(h.request_resync("").await.unwrap(), 8);
    let seen = f.seen();
    assert_eq!(seen.resyncs.last().unwrap(), &("inst-2".to_owned(), String::new()));
    assert_eq!(seen.statuses.len(), 3, "nothing to catch up: the request carried it");

    h.stop();
    tokio::time::timeout(WAIT, run).await.unwrap().unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_set_while_registering_is_sent_once_registered() {
    let f = Fixture::start().await;
    f.fake.release.send_replace(false); // hold Registered back
    let plugin = f.plugin().build().unwrap();
    let h = plugin.handle();
    let run = tokio::spawn(plugin.run());
    let seen = f.wait_seen("the registration request", |s| !s.registrations.is_empty()).await;
    assert_eq!(seen.registrations[0].status(), PluginStatus::Ready);
    // Registering (nrid has not answered): no error, sent once registered.
    h.set_status(PluginStatus::NotReady, "lost my backend").await.unwrap();
    assert!(f.seen().statuses.is_empty());
    f.fake.release.send_replace(true);
    registered_as(&h, "inst-1").await;
    let seen = f.wait_seen("the status sent after registering", |s| !s.statuses.is_empty()).await;
    assert_eq!(seen.statuses, [("inst-1".to_owned(), PluginStatus::NotReady, "lost my backend".to_owned())]);
    h.stop();
    tokio::time::timeout(WAIT, run).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn not_registered_and_invalid_input() {
    let f = Fixture::start().await;
    let plugin = f.plugin().build().unwrap();
    let h = plugin.handle();
    assert_eq!(h.status(), (PluginStatus::Ready, String::new()));
    assert!(matches!(h.request_resync("x").await, Err(Error::NotRegistered)));
    assert!(matches!(h.set_status(PluginStatus::Degraded, "half").await, Err(Error::NotRegistered)));
    assert_eq!(h.status(), (PluginStatus::Degraded, "half".to_owned()), "kept for the next registration");
    let e = h.set_status(PluginStatus::Ready, "x".repeat(1025)).await.unwrap_err();
    assert_eq!(e.to_string(), "invalid argument: reason: 1025 bytes, at most 1024 are allowed");
    assert!(matches!(h.request_resync("é".repeat(513)).await, Err(Error::InvalidArgument(_))));
    assert_eq!(h.status(), (PluginStatus::Degraded, "half".to_owned()), "refused input changes nothing");
    assert!(matches!(h.set_status(PluginStatus::Unspecified, "").await, Err(Error::NotRegistered)));
    assert_eq!(h.status(), (PluginStatus::Ready, String::new()), "UNSPECIFIED is READY");
    let seen = f.seen();
    assert!(seen.statuses.is_empty() && seen.resyncs.is_empty());

    let e = f.plugin().selectors(vec![EventSelector::new(); 17]).build().err().unwrap();
    assert_eq!(e.to_string(), "invalid plugin configuration: selectors: 17 selectors, at most 16 are allowed");
    let e = f.plugin().status(PluginStatus::NotReady, "x".repeat(1025)).build().err().unwrap();
    assert!(e.to_string().contains("status reason: 1025 bytes"), "{e}");
    let p = f.plugin().status(PluginStatus::Unspecified, "").build().unwrap();
    assert_eq!(p.handle().status().0, PluginStatus::Ready);
}
