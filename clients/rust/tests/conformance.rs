//! Conformance scenarios of the plugin SDK against a real nrid: registration,
//! event order, adjustments, vetoes, Shutdown, resync, paging, unsolicited
//! updates, instance ids, peer-credential authentication, and health and
//! reflection as grpcurl sees them.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use nri_grpc::testing::{NODE_NAME, Nrid, RUNTIME_NAME, container, pod, pod_with_annotations, unix_channel};
use nri_grpc::v1beta1::plugin_service_client::PluginServiceClient;
use nri_grpc::v1beta1::*;
use nri_grpc::{
    Adjustment, Error, Event, EventMask, Exit, Handler, HandlerError, HandlerResult, Plugin, PluginHandle,
    ShutdownKind, Update, evict, rpc,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::{Code, Request, Status};

type Run = JoinHandle<Result<Exit, Error>>;

/// Starts a plugin and waits until it is registered.
async fn start<H: Handler>(p: Plugin<H>) -> (PluginHandle, Run, Registered) {
    let h = p.handle();
    let run = tokio::spawn(p.run());
    let reg = tokio::time::timeout(WAIT, h.wait_registered()).await.expect("registration");
    (h, run, reg)
}

async fn join(run: Run) -> Result<Exit, Error> {
    tokio::time::timeout(WAIT, run).await.expect("run ended").expect("run did not panic")
}

/// Sends one event through AdaptationService, as a runtime does.
async fn send(nrid: &Nrid, ev: &str, p: &PodSandbox, c: &Container) -> Result<Vec<PluginError>, Status> {
    let mut a = nrid.adaptation();
    let (pod, ctr) = (Some(p.clone()), Some(c.clone()));
    let res = LinuxResources { cpu: Some(LinuxCpu { shares: Some(512), ..Default::default() }), ..Default::default() };
    Ok(match ev {
        "RunPodSandbox" => {
            a.run_pod_sandbox(AdaptationServiceRunPodSandboxRequest { pod }).await?;
            vec![]
        }
        "UpdatePodSandbox" => {
            a.update_pod_sandbox(AdaptationServiceUpdatePodSandboxRequest {
                pod,
                linux_resources: Some(res),
                ..Default::default()
            })
            .await?;
            vec![]
        }
        "PostUpdatePodSandbox" => {
            a.post_update_pod_sandbox(AdaptationServicePostUpdatePodSandboxRequest { pod })
                .await?
                .into_inner()
                .plugin_errors
        }
        "StopPodSandbox" => {
            a.stop_pod_sandbox(AdaptationServiceStopPodSandboxRequest { pod }).await?.into_inner().plugin_errors
        }
        "RemovePodSandbox" => {
            a.remove_pod_sandbox(AdaptationServiceRemovePodSandboxRequest { pod }).await?.into_inner().plugin_errors
        }
        "CreateContainer" => {
            a.create_container(AdaptationServiceCreateContainerRequest { pod, container: ctr }).await?;
            vec![]
        }
        "PostCreateContainer" => {
            a.post_create_container(AdaptationServicePostCreateContainerRequest { pod, container: ctr })
                .await?
                .into_inner()
                .plugin_errors
        }
        "StartContainer" => {
            a.start_container(AdaptationServiceStartContainerRequest { pod, container: ctr }).await?;
            vec![]
        }
        "PostStartContainer" => {
            a.post_start_container(AdaptationServicePostStartContainerRequest { pod, container: ctr })
                .await?
                .into_inner()
                .plugin_errors
        }
        "UpdateContainer" => {
            a.update_container(AdaptationServiceUpdateContainerRequest {
                pod,
                container: ctr,
                linux_resources: Some(res),
            })
            .await?;
            vec![]
        }
        "PostUpdateContainer" => {
            a.post_update_container(AdaptationServicePostUpdateContainerRequest { pod, container: ctr })
                .await?
                .into_inner()
                .plugin_errors
        }
        "StopContainer" => {
            a.stop_container(AdaptationServiceStopContainerRequest { pod, container: ctr })
                .await?
                .into_inner()
                .plugin_errors
        }
        "RemoveContainer" => {
            a.remove_container(AdaptationServiceRemoveContainerRequest { pod, container: ctr })
                .await?
                .into_inner()
                .plugin_errors
        }
        other => panic!("unknown event {other}"),
    })
}

const LIFECYCLE: [&str; 13] = [
    "RunPodSandbox",
    "CreateContainer",
    "PostCreateContainer",
    "StartContainer",
    "PostStartContainer",
    "UpdateContainer",
    "PostUpdateContainer",
    "UpdatePodSandbox",
    "PostUpdatePodSandbox",
    "StopContainer",
    "RemoveContainer",
    "StopPodSandbox",
    "RemovePodSandbox",
];

/// Asserts a dispatch error: code, ErrorInfo reason, plugins named.
fn fails_with(
    what: &str,
    r: Result<impl std::fmt::Debug, Status>,
    code: Code,
    reason: &str,
    plugins: &[&str],
) -> Status {
    let st = match r {
        Ok(v) => panic!("{what}: succeeded ({v:?}), want {code:?} {reason}"),
        Err(st) => st,
    };
    assert_eq!(st.code(), code, "{what}: {st:?}");
    assert_eq!(rpc::reason(&st), reason, "{what}: {st:?}");
    assert_eq!(rpc::plugins(&st), plugins, "{what}: {st:?}");
    st
}

fn env_of(a: &ContainerAdjustment) -> Vec<String> {
    a.env.iter().map(|kv| format!("{}={}", kv.key, kv.value)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_configure_synchronize_and_instance_checks() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![pod("p0")], vec![container("p0", "c0")]).await;
    let rec = Recorder::default();
    let p = nrid
        .plugin_builder(TestPlugin::new("10-rec", &rec, lifecycle()), "10", "rec")
        .plugin_version("1.2.3")
        .build()
        .unwrap();
    let endpoint = p.endpoint().to_owned();
    let (h, run, reg) = start(p).await;

    // Registered arrives after Configure and Synchronize, with the same instance id.
    let calls = rec.calls();
    assert_eq!(calls.iter().map(|c| c.event).collect::<Vec<_>>(), ["Configure", "Synchronize"], "{calls:#?}");
    assert!(!reg.instance_id.is_empty());
    assert!(
        calls[0].detail.starts_with(&format!("instance={} runtime={RUNTIME_NAME} node={NODE_NAME}", reg.instance_id)),
        "{calls:#?}"
    );
    assert!(calls.iter().all(|c| c.instance == reg.instance_id), "metadata instance ids: {calls:#?}");
    assert_eq!(calls[1].detail, "epoch=1 reason=Registration more=false pods=p0 containers=c0");
    assert_eq!(reg.events, lifecycle().bits());
    assert_eq!(reg.identity, format!("uid:{}", unsafe { libc::geteuid() }));
    assert_eq!((reg.runtime_name.as_str(), reg.node_name.as_str()), (RUNTIME_NAME, NODE_NAME));
    assert_eq!(h.registered().unwrap().instance_id, reg.instance_id);

    // nrid lists it; the endpoint is a 0600 socket.
    let plugins = nrid.wait_plugins(&["10-rec"]).await;
    assert_eq!(plugins[0].instance_id, reg.instance_id);
    assert_eq!(plugins[0].plugin_version, "1.2.3");
    // The SDK's version string: SDK, protocol, the crate's version.
    assert_eq!(plugins[0].nri_version, format!("rust-sdk v1beta1 nri-grpc/{}", env!("CARGO_PKG_VERSION")));
    let mode = std::fs::metadata(&endpoint).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // Health on the endpoint is SERVING while registered.
    let mut health = tonic_health::pb::health_client::HealthClient::new(unix_channel(&endpoint));
    let st = health
        .check(tonic_health::pb::HealthCheckRequest { service: "nri.v1beta1.PluginService".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(st.status(), tonic_health::pb::health_check_response::ServingStatus::Serving);

    // Calls for another instance are refused with UNAVAILABLE, without acting.
    let mut direct = PluginServiceClient::new(unix_channel(&endpoint));
    let call = |id: &str| {
        let mut r = Request::new(RunPodSandboxRequest { pod: Some(pod("direct")) });
        r.metadata_mut().insert("nri-instance-id", id.parse().unwrap());
        r
    };
    let err = direct.run_pod_sandbox(call("not-the-instance")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("not-the-instance"), "{err:?}");
    let err = direct.run_pod_sandbox(Request::new(RunPodSandboxRequest::default())).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "no instance id: {err:?}");
    assert!(rec.strings(&["RunPodSandbox"]).is_empty());
    direct.run_pod_sandbox(call(&reg.instance_id)).await.expect("the current instance id is accepted");
    assert_eq!(rec.strings(&["RunPodSandbox"]), ["10-rec:RunPodSandbox"]);
    // Configure is accepted only while a RegisterPlugin call is pending.
    let err = direct
        .configure(Request::new(ConfigureRequest { instance_id: "x".into(), ..Default::default() }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");

    h.stop();
    assert_eq!(join(run).await.unwrap(), Exit::Stopped);
    assert!(!endpoint.exists(), "the endpoint is removed when run returns");
    nrid.wait_plugins(&[]).await;
}

/// A plugin whose Configure waits until the test opens the gate: it serves,
/// but is not registered yet.
struct Gated {
    entered: watch::Sender<bool>,
    gate: watch::Receiver<bool>,
}

impl Handler for Gated {
    fn events(&self) -> EventMask {
        mask(&[Event::CreateContainer])
    }

    async fn configure(&self, _ctx: nri_grpc::Context, _req: ConfigureRequest) -> HandlerResult<ConfigureResponse> {
        self.entered.send_replace(true);
        let _ = self.gate.clone().wait_for(|open| *open).await;
        Ok(ConfigureResponse::default())
    }
}

/// What `grpcurl -d '{"service": SERVICE}' ... Health/Check` says.
async fn health_status(endpoint: &str, service: &str) -> String {
    let req = format!(r#"{{"service": "{service}"}}"#);
    let out = grpcurl(&["-d", &req, endpoint, "grpc.health.v1.Health/Check"]).await;
    let status = out.split('"').nth(3).unwrap_or_else(|| panic!("Health/Check printed {out:?}"));
    assert_eq!(out.split('"').nth(1), Some("status"), "Health/Check printed {out:?}");
    status.to_owned()
}

// grpcurl, run as nrid's uid (this process's), against the plugin's socket:
// reflection lists what the plugin serves and describes it with the proto
// comments; health is NOT_SERVING until the plugin is registered, then
// SERVING; v1alpha reflection (older clients) lists the same services.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_sees_health_and_reflection() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let (entered, mut entered_rx) = watch::channel(false);
    let (gate, gate_rx) = watch::channel(false);
    let p = nrid.plugin_builder(Gated { entered, gate: gate_rx }, "10", "probe").build().unwrap();
    let endpoint = p.endpoint().to_str().unwrap().to_owned();
    let h = p.handle();
    let run = tokio::spawn(p.run());

    // Configure is running: the plugin serves but is not registered.
    tokio::time::timeout(WAIT, entered_rx.wait_for(|e| *e)).await.expect("Configure").unwrap();
    assert!(h.registered().is_none());
    for service in ["", "nri.v1beta1.PluginService"] {
        assert_eq!(health_status(&endpoint, service).await, "NOT_SERVING", "service {service:?} before Registered");
    }
    gate.send_replace(true);
    tokio::time::timeout(WAIT, h.wait_registered()).await.expect("registration");
    for service in ["", "nri.v1beta1.PluginService"] {
        assert_eq!(health_status(&endpoint, service).await, "SERVING", "service {service:?} once registered");
    }

    // list: exactly what the endpoint serves (not the other nri services the
    // descriptor set describes).
    let list = grpcurl(&[&endpoint, "list"]).await;
    let mut services: Vec<&str> = list.lines().collect();
    services.sort();
    assert_eq!(
        services,
        [
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
            "nri.v1beta1.PluginService",
        ],
        "grpcurl list:\n{list}"
    );

    // describe: the service with its methods and the proto comments.
    let desc = grpcurl(&[&endpoint, "describe", "nri.v1beta1.PluginService"]).await;
    for want in [
        "nri.v1beta1.PluginService is a service:",
        "// Error conventions: on a creating event (RunPodSandbox, UpdatePodSandbox,",
        "service PluginService {",
        "rpc CreateContainer ( .nri.v1beta1.CreateContainerRequest ) returns ( .nri.v1beta1.CreateContainerResponse );",
        "rpc Configure (",
    ] {
        assert!(desc.contains(want), "describe nri.v1beta1.PluginService lacks {want:?}:\n{desc}");
    }
    // A message of another file (types.proto), with its field comments.
    let desc = grpcurl(&[&endpoint, "describe", "nri.v1beta1.Container"]).await;
    assert!(desc.contains("nri.v1beta1.Container is a message:") && desc.contains("//"), "{desc}");

    // The same through v1alpha, which grpcurl falls back to for old servers.
    let mut alpha = tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient::new(unix_channel(
        std::path::Path::new(&endpoint),
    ));
    use tonic_reflection::pb::v1alpha::{
        ServerReflectionRequest, server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = alpha.server_reflection_info(tokio_stream::iter([req])).await.unwrap().into_inner();
    let rsp = stream.message().await.unwrap().expect("a response");
    let Some(MessageResponse::ListServicesResponse(l)) = rsp.message_response else { panic!("{rsp:?}") };
    let mut names: Vec<String> = l.service.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(names, services, "v1alpha ListServices");

    h.stop();
    assert_eq!(join(run).await.unwrap(), Exit::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_plugins_in_index_then_name_order() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let rec = Recorder::default();
    // Started out of order; "10-Z" < "10-a" byte-wise.
    let mut runs = vec![];
    for (idx, name, events) in [
        ("20", "b", lifecycle()),
        ("10", "a", lifecycle()),
        ("10", "Z", lifecycle()),
        ("30", "create-only", mask(&[Event::CreateContainer, Event::StopContainer])),
    ] {
        let full = format!("{idx}-{name}");
        let (_, run, _) =
            start(nrid.plugin_builder(TestPlugin::new(&full, &rec, events), idx, name).build().unwrap()).await;
        runs.push(run);
    }
    nrid.wait_plugins(&["10-Z", "10-a", "20-b", "30-create-only"]).await;

    let (p, c) = (pod("pod0"), container("pod0", "ctr0"));
    for ev in LIFECYCLE {
        let errs = send(&nrid, ev, &p, &c).await.unwrap_or_else(|e| panic!("{ev}: {e:?}"));
        assert!(errs.is_empty(), "{ev}: {errs:?}");
    }
    let mut want = vec![];
    for ev in LIFECYCLE {
        for full in ["10-Z", "10-a", "20-b"] {
            want.push(format!("{full}:{ev}"));
        }
        if ev == "CreateContainer" || ev == "StopContainer" {
            want.push(format!("30-create-only:{ev}"));
        }
    }
    assert_eq!(rec.strings(&LIFECYCLE), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adjustments_merge_with_removal_markers_and_conflicts() {
    let mut nrid = Nrid::start().await;
    let mut c0 = container("pod0", "ctr0");
    c0.env.push("REMOVE_ME=1".into());
    nrid.attach(vec![pod("pod0")], vec![c0.clone()]).await;
    let rec = Recorder::default();
    let a = TestPlugin::new("10-a", &rec, mask(&[Event::CreateContainer])).on_create(|req| {
        let mut a = Adjustment::new();
        a.add_env("FOO", "a")
            .remove_env("REMOVE_ME")
            .add_annotation("injected-by", "10-a")
            .add_rlimit("RLIMIT_NOFILE", 4096, 1024)
            .add_mount(Mount {
                destination: "/data".into(),
                source: "/srv/data".into(),
                r#type: "bind".into(),
                options: vec!["rbind".into(), "ro".into()],
            })
            .set_linux_memory_limit(1 << 30);
        let mut rsp = a.into_response();
        // Updates of, and evictions of, other (existing) containers.
        let name = &req.container.as_ref().unwrap().name;
        if name == "ctr1" {
            let mut u = Update::new("ctr0");
            u.set_linux_cpu_shares(256);
            rsp.update.push(u.into_proto());
            rsp.evict.push(evict("ctr0", "make room"));
        }
        Ok(rsp)
    });
    // 20-b overrides 10-a's FOO with the remove-then-add idiom; 30-c claims
    // FOO without removing it first for "conflict" containers.
    let b = TestPlugin::new("20-b", &rec, mask(&[Event::CreateContainer])).on_create(|_| {
        let mut a = Adjustment::new();
        a.remove_env("FOO").add_env("FOO", "b").add_rlimit("RLIMIT_CORE", 0, 0);
        Ok(a.into_response())
    });
    let c = TestPlugin::new("30-c", &rec, mask(&[Event::CreateContainer])).on_create(|req| {
        let mut a = Adjustment::new();
        if req.container.as_ref().unwrap().name.starts_with("conflict") {
            a.add_env("FOO", "c");
        }
        Ok(a.into_response())
    });
    let mut runs = vec![];
    for (p, idx, name) in [(a, "10", "a"), (b, "20", "b"), (c, "30", "c")] {
        runs.push(start(nrid.plugin_builder(p, idx, name).build().unwrap()).await);
    }

    let rsp = nrid.create_container(pod("pod0"), container("pod0", "ctr1")).await.expect("CreateContainer");
    let adj = rsp.adjust.expect("merged adjustment");
    let mut env = env_of(&adj);
    env.sort();
    // The removal reaches the runtime; the override is just the set.
    assert_eq!(env, ["-REMOVE_ME=", "FOO=b"]);
    assert_eq!(adj.annotations.get("injected-by").map(String::as_str), Some("10-a"));
    let mut rl: Vec<_> = adj.rlimits.iter().map(|r| (r.r#type.as_str(), r.hard, r.soft)).collect();
    rl.sort();
    assert_eq!(rl, [("RLIMIT_CORE", 0, 0), ("RLIMIT_NOFILE", 4096, 1024)]);
    assert_eq!(adj.mounts.len(), 1);
    assert_eq!((adj.mounts[0].destination.as_str(), adj.mounts[0].source.as_str()), ("/data", "/srv/data"));
    let mem = adj.linux.unwrap().resources.unwrap().memory.unwrap();
    assert_eq!(mem.limit, Some(1 << 30));
    assert_eq!(rsp.update.len(), 1);
    assert_eq!(rsp.update[0].container_id, "ctr0");
    assert_eq!(
        rsp.update[0].linux.as_ref().unwrap().resources.as_ref().unwrap().cpu.as_ref().unwrap().shares,
        Some(256)
    );
    assert_eq!(rsp.evict, [evict("ctr0", "make room")]);
    // Later plugins see the changes of earlier ones.
    let seen_by_b = rec.calls().into_iter().find(|c| c.plugin == "20-b" && c.event == "CreateContainer").unwrap();
    assert!(seen_by_b.detail.contains("FOO=a") && !seen_by_b.detail.contains("REMOVE_ME"), "{seen_by_b:?}");

    // Setting an entry another plugin owns without removing it conflicts.
    let r = nrid.create_container(pod("pod0"), container("pod0", "conflict1")).await;
    let st = fails_with("conflict", r, Code::FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT", &["30-c", "20-b"]);
    assert!(st.message().contains("Env FOO"), "{st:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vetoes_errors_panics_and_validation() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let rec = Recorder::default();
    let mut v = TestPlugin::new("10-veto", &rec, lifecycle()).failing(|ev| match ev {
        "CreateContainer" => Some(HandlerError::invalid("annotation foo: not a number")),
        // A plain error through `?` is a FAILED_PRECONDITION veto.
        "StartContainer" => Some("x".parse::<u32>().unwrap_err().into()),
        "PostStartContainer" => Some(HandlerError::veto("only recorded")),
        _ => None,
    });
    v.panic_on = Some("UpdatePodSandbox");
    let next = TestPlugin::new("20-next", &rec, lifecycle());
    let val = TestPlugin::new("30-val", &rec, mask(&[Event::ValidateContainerAdjustment])).on_validate(|req| {
        if req.container.as_ref().unwrap().name == "forbidden" {
            return Err(HandlerError::veto("forbidden containers are forbidden"));
        }
        Ok(ValidateContainerAdjustmentResponse::default())
    });
    let _v = start(nrid.plugin_builder(v, "10", "veto").build().unwrap()).await;
    let _n = start(nrid.plugin_builder(next, "20", "next").build().unwrap()).await;
    let _val = start(nrid.plugin_builder(val, "30", "val").build().unwrap()).await;
    let (p, c) = (pod("pod0"), container("pod0", "ctr0"));

    send(&nrid, "RunPodSandbox", &p, &c).await.expect("RunPodSandbox");
    let st = fails_with(
        "CreateContainer",
        send(&nrid, "CreateContainer", &p, &c).await,
        Code::InvalidArgument,
        "DISPATCH_OUTCOME_VETOED",
        &["10-veto"],
    );
    assert!(st.message().contains("10-veto") && st.message().contains("annotation foo: not a number"), "{st:?}");
    assert!(
        !rec.strings(&["CreateContainer"]).contains(&"20-next:CreateContainer".to_owned()),
        "later plugins are not called"
    );
    assert!(rec.strings(&["ValidateContainerAdjustment"]).is_empty(), "no validation after a veto");

    let st = fails_with(
        "StartContainer",
        send(&nrid, "StartContainer", &p, &c).await,
        Code::FailedPrecondition,
        "DISPATCH_OUTCOME_VETOED",
        &["10-veto"],
    );
    assert!(st.message().contains("invalid digit"), "{st:?}");

    // A panicking handler answers INTERNAL: a veto, and the plugin stays.
    fails_with(
        "UpdatePodSandbox",
        send(&nrid, "UpdatePodSandbox", &p, &c).await,
        Code::Internal,
        "DISPATCH_OUTCOME_VETOED",
        &["10-veto"],
    );

    // Notification errors are only recorded; delivery goes on.
    let errs = send(&nrid, "PostStartContainer", &p, &c).await.expect("PostStartContainer");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].plugin.as_ref().map(|p| (p.index.as_str(), p.name.as_str())), Some(("10", "veto")));
    assert_eq!(errs[0].code, Code::FailedPrecondition as i32);
    assert!(rec.strings(&["PostStartContainer"]).contains(&"20-next:PostStartContainer".to_owned()));

    // A validator's error is a rejection (10-veto vetoes every
    // CreateContainer: stop it first).
    _v.0.stop();
    join(_v.1).await.unwrap();
    nrid.wait_plugins(&["20-next", "30-val"]).await;
    let r = nrid.create_container(p.clone(), container("pod0", "forbidden")).await;
    let st = fails_with("validation", r, Code::FailedPrecondition, "DISPATCH_OUTCOME_REJECTED", &["30-val"]);
    assert!(st.message().contains("forbidden containers are forbidden"), "{st:?}");
    nrid.create_container(p.clone(), container("pod0", "allowed")).await.expect("an accepted container");
    let validated: Vec<String> =
        rec.calls().into_iter().filter(|c| c.event == "ValidateContainerAdjustment").map(|c| c.detail).collect();
    assert_eq!(validated.len(), 2, "{validated:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_instance_replaces_the_old_one() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let rec1 = Recorder::default();
    let rec2 = Recorder::default();
    let p1 = nrid.plugin_builder(TestPlugin::new("10-dup", &rec1, lifecycle()), "10", "dup").build().unwrap();
    let ep1 = p1.endpoint().to_owned();
    let (_h1, run1, reg1) = start(p1).await;
    let ep2 = nrid.plugin_dir.join("10-dup-new.sock");
    let p2 = nrid
        .plugin_builder(TestPlugin::new("10-dup", &rec2, lifecycle()), "10", "dup")
        .endpoint(ep2.to_string_lossy())
        .build()
        .unwrap();
    let (h2, _run2, reg2) = start(p2).await;
    assert_ne!(reg1.instance_id, reg2.instance_id);

    // The old instance is told it was replaced and does not register again.
    assert_eq!(join(run1).await.unwrap(), Exit::Replaced);
    let sd = rec1.wait_call("10-dup", "Shutdown").await;
    assert_eq!(sd.detail, format!("{:?}", ShutdownKind::Replaced));
    assert_eq!(sd.instance, reg1.instance_id);
    assert!(!ep1.exists());

    let plugins = nrid.wait_plugins(&["10-dup"]).await;
    assert_eq!(plugins[0].instance_id, reg2.instance_id);
    send(&nrid, "RunPodSandbox", &pod("pod0"), &container("pod0", "c")).await.unwrap();
    let call = rec2.wait_call("10-dup", "RunPodSandbox").await;
    assert_eq!(call.instance, reg2.instance_id);
    assert!(rec1.strings(&["RunPodSandbox"]).is_empty());
    assert_eq!(h2.registered().unwrap().instance_id, reg2.instance_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reregisters_when_nrid_stops_restarts_or_crashes() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let rec = Recorder::default();
    let (h, run, reg1) =
        start(nrid.plugin_builder(TestPlugin::new("10-sticky", &rec, lifecycle()), "10", "sticky").build().unwrap())
            .await;

    // Graceful stop: Shutdown SERVER_STOPPING, then the stream ends.
    nrid.stop().await;
    let sd = rec.wait_call("10-sticky", "Shutdown").await;
    assert_eq!(sd.detail, format!("{:?}", ShutdownKind::ServerStopping));
    let mut w = h.watch_registration();
    tokio::time::timeout(WAIT, w.wait_for(Option::is_none)).await.unwrap().unwrap();

    nrid.restart().await;
    let reg2 =
        tokio::time::timeout(WAIT, h.wait_registered_other_than(&reg1.instance_id)).await.expect("re-registration");
    send(&nrid, "RunPodSandbox", &pod("pod0"), &container("pod0", "c")).await.unwrap();
    let call = rec.wait_call("10-sticky", "RunPodSandbox").await;
    assert_eq!(call.instance, reg2.instance_id);

    // A crash: no Shutdown, the stream breaks; the plugin registers again.
    nrid.kill().await;
    nrid.restart().await;
    let reg3 =
        tokio::time::timeout(WAIT, h.wait_registered_other_than(&reg2.instance_id)).await.expect("re-registration");
    nrid.wait_plugins(&["10-sticky"]).await;
    assert_eq!(rec.strings(&["Shutdown"]).len(), 1, "no Shutdown on a crash");
    send(&nrid, "RunPodSandbox", &pod("pod1"), &container("pod1", "c")).await.unwrap();
    let calls =
        rec.wait("RunPodSandbox of pod1", |v| v.iter().filter(|c| c.event == "RunPodSandbox").count() == 2).await;
    assert_eq!(calls.iter().rev().find(|c| c.event == "RunPodSandbox").unwrap().instance, reg3.instance_id);
    assert!(!run.is_finished());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_with_epochs_or_synthesized_teardown() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![pod("p0"), pod("p1")], vec![container("p0", "c0"), container("p1", "c1")]).await;
    let rec = Recorder::default();
    let teardown =
        mask(&[Event::StopContainer, Event::RemoveContainer, Event::StopPodSandbox, Event::RemovePodSandbox]);
    let _a = start(
        nrid.plugin_builder(TestPlugin::new("10-resync", &rec, lifecycle()), "10", "resync")
            .resync(true)
            .build()
            .unwrap(),
    )
    .await;
    let _b =
        start(nrid.plugin_builder(TestPlugin::new("20-events", &rec, teardown), "20", "events").build().unwrap()).await;
    assert_eq!(
        rec.wait_call("10-resync", "Synchronize").await.detail,
        "epoch=1 reason=Registration more=false pods=p0,p1 containers=c0,c1"
    );

    // The runtime restarts: p1 and c1 vanished, p2 and c2 appeared.
    nrid.attach(vec![pod("p0"), pod("p2")], vec![container("p0", "c0"), container("p2", "c2")]).await;
    let calls = rec
        .wait("the resync", |v| {
            v.iter().filter(|c| c.plugin == "10-resync" && c.event == "Synchronize").count() == 2
                && v.iter().any(|c| c.plugin == "20-events" && c.event == "RemovePodSandbox")
        })
        .await;
    let sync: Vec<&str> = calls
        .iter()
        .filter(|c| c.event == "Synchronize" && c.plugin == "10-resync")
        .map(|c| c.detail.as_str())
        .collect();
    assert_eq!(sync[1], "epoch=2 reason=RuntimeRestarted more=false pods=p0,p2 containers=c0,c2");
    let synthesized: Vec<String> = calls
        .iter()
        .filter(|c| c.plugin == "20-events" && !["Configure", "Synchronize"].contains(&c.event))
        .map(|c| format!("{}:{}", c.event, c.detail.split(' ').next().unwrap_or("")))
        .collect();
    assert_eq!(synthesized, ["StopContainer:c1", "RemoveContainer:c1", "StopPodSandbox:p1", "RemovePodSandbox:p1"]);
    // Without resync, no Synchronize but the first.
    assert_eq!(calls.iter().filter(|c| c.plugin == "20-events" && c.event == "Synchronize").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synchronize_pages_are_collected_into_one_call() {
    let mut nrid = Nrid::start().await;
    // About 200 KiB of state: more than the 64 KiB the plugin accepts, so
    // nrid must split it into pages.
    let big = "x".repeat(5000);
    let pods: Vec<PodSandbox> = (0..40).map(|i| pod_with_annotations(&format!("p{i:02}"), &[("big", &big)])).collect();
    let ctrs: Vec<Container> = (0..40).map(|i| container(&format!("p{i:02}"), &format!("c{i:02}"))).collect();
    nrid.attach(pods, ctrs).await;
    let rec = Recorder::default();
    let (_h, _run, reg) = start(
        nrid.plugin_builder(TestPlugin::new("10-paged", &rec, mask(&[Event::CreateContainer])), "10", "paged")
            .max_message_size(64 << 10)
            .build()
            .unwrap(),
    )
    .await;
    assert_eq!(reg.capabilities.unwrap().max_message_size, 64 << 10);
    let sync: Vec<Call> = rec.calls().into_iter().filter(|c| c.event == "Synchronize").collect();
    assert_eq!(sync.len(), 1, "one handler call for all pages");
    let want_pods: Vec<String> = (0..40).map(|i| format!("p{i:02}")).collect();
    let want_ctrs: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
    assert_eq!(
        sync[0].detail,
        format!(
            "epoch=1 reason=Registration more=false pods={} containers={}",
            want_pods.join(","),
            want_ctrs.join(",")
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsolicited_updates_reach_the_runtime() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![pod("p0")], vec![container("p0", "c0"), container("p0", "c1")]).await;
    let rec = Recorder::default();
    let p = nrid
        .plugin_builder(TestPlugin::new("10-balancer", &rec, mask(&[Event::CreateContainer])), "10", "balancer")
        .build()
        .unwrap();
    let h = p.handle();
    assert!(matches!(h.update_containers(vec![], vec![]).await, Err(Error::NotRegistered)));
    let (h, _run, _) = start(p).await;
    let mut u = Update::new("c0");
    u.set_linux_cpu_set_cpus("0-1");
    let rsp =
        h.update_containers(vec![u.into_proto()], vec![evict("c1", "rebalancing")]).await.expect("UpdateContainers");
    assert!(rsp.failed.is_empty() && rsp.failed_evictions.is_empty(), "{rsp:?}");
    let applied = nrid.wait_applied(1).await;
    assert_eq!(applied[0].plugin, "10-balancer");
    assert_eq!(applied[0].update[0].container_id, "c0");
    assert_eq!(applied[0].evict, [evict("c1", "rebalancing")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_registration_is_not_retried() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let rec = Recorder::default();
    // An endpoint outside nrid's plugin socket directory.
    let outside = nrid.dir.join("outside.sock");
    let p = nrid
        .plugin_builder(TestPlugin::new("10-outside", &rec, lifecycle()), "10", "outside")
        .endpoint(outside.to_string_lossy())
        .build()
        .unwrap();
    match join(tokio::spawn(p.run())).await {
        Err(Error::Refused(st)) => {
            // PROTOCOL.md §12 lists INVALID_ARGUMENT for this reason; nrid
            // answers PERMISSION_DENIED for an endpoint outside its policy.
            // Clients branch on the reason, as the document asks.
            assert_eq!(rpc::reason(&st), "REGISTRATION_REFUSAL_INVALID_ENDPOINT", "{st:?}");
            assert!(matches!(st.code(), Code::InvalidArgument | Code::PermissionDenied), "{st:?}");
            assert_eq!(rpc::field_violations(&st)[0].field, "endpoint");
        }
        other => panic!("want a refusal, got {other:?}"),
    }
    assert!(rec.calls().is_empty(), "nrid never dialed the plugin");
}

/// Connects to a unix socket as `uid` (effective, for this thread only: the
/// kernel's credentials are per thread), so the peer credentials the plugin
/// sees are `uid`'s.
fn connect_as(uid: u32, path: std::path::PathBuf) -> std::io::Result<std::os::unix::net::UnixStream> {
    std::thread::spawn(move || {
        // SAFETY: a raw setresuid(2) changes this thread's credentials only;
        // the thread ends right after connecting.
        let r =
            unsafe { libc::syscall(libc::SYS_setresuid, -1 as libc::c_long, uid as libc::c_long, -1 as libc::c_long) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        std::os::unix::net::UnixStream::connect(path)
    })
    .join()
    .unwrap()
}

// Needs root, to connect as another uid: ignored by default so that a
// non-root run lists it as skipped with this reason; `make rust-test` as root
// (CI) passes --include-ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root: connects to the plugin as uid 65534 (make rust-test runs it as root)"]
async fn only_nrids_uid_and_root_may_call_the_plugin() {
    assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root: it connects to the plugin as uid 65534");
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let rec = Recorder::default();
    let p = nrid.plugin_builder(TestPlugin::new("10-guarded", &rec, lifecycle()), "10", "guarded").build().unwrap();
    let endpoint = p.endpoint().to_owned();
    let (_h, _run, reg) = start(p).await;
    // Let nobody reach the socket file, so that only the peer-credential
    // check stands in the way.
    std::fs::set_permissions(&endpoint, std::fs::Permissions::from_mode(0o666)).unwrap();
    let stream = connect_as(65534, endpoint.clone()).expect("connect as nobody");
    stream.set_nonblocking(true).unwrap();
    let stream = std::sync::Mutex::new(Some(tokio::net::UnixStream::from_std(stream).unwrap()));
    let channel = tonic::transport::Endpoint::from_static("http://localhost").connect_with_connector_lazy(
        tower::service_fn(move |_: tonic::codegen::http::Uri| {
            let s = stream.lock().unwrap().take();
            async move {
                let s = s.ok_or_else(|| std::io::Error::other("one connection only"))?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
            }
        }),
    );
    let mut r = Request::new(RunPodSandboxRequest { pod: Some(pod("intruder")) });
    r.metadata_mut().insert("nri-instance-id", reg.instance_id.parse().unwrap());
    let err = PluginServiceClient::new(channel).run_pod_sandbox(r).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert!(err.message().contains("uid 65534 may not call plugin 10-guarded"), "{err:?}");
    assert!(rec.strings(&["RunPodSandbox"]).is_empty());
    // Root (and nrid's uid) may.
    let mut r = Request::new(RunPodSandboxRequest { pod: Some(pod("root")) });
    r.metadata_mut().insert("nri-instance-id", reg.instance_id.parse().unwrap());
    PluginServiceClient::new(unix_channel(&endpoint)).run_pod_sandbox(r).await.expect("root may call");
}
