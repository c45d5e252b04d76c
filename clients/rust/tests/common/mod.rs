//! A recording test plugin for the conformance tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use nri_grpc::v1beta1::*;
use nri_grpc::{Context, Event, EventMask, Handler, HandlerError, HandlerResult};
use tokio::sync::watch;

pub use nri_grpc::testing::WAIT;

/// One call a test plugin received.
#[derive(Clone, Debug)]
pub struct Call {
    pub plugin: String,
    pub event: &'static str,
    pub instance: String,
    pub detail: String,
}

/// Every call of every plugin of a test, in the order they happened.
#[derive(Clone)]
pub struct Recorder(Arc<watch::Sender<Vec<Call>>>);

impl Default for Recorder {
    fn default() -> Self {
        Recorder(Arc::new(watch::channel(vec![]).0))
    }
}

impl Recorder {
    pub fn push(&self, c: Call) {
        self.0.send_modify(|v| v.push(c));
    }

    pub fn calls(&self) -> Vec<Call> {
        self.0.borrow().clone()
    }

    /// "plugin:event" of every call of the given events.
    pub fn strings(&self, events: &[&str]) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|c| events.is_empty() || events.contains(&c.event))
            .map(|c| format!("{}:{}", c.plugin, c.event))
            .collect()
    }

    /// Waits until `pred` holds for the calls, and returns them.
    pub async fn wait(&self, what: &str, pred: impl Fn(&[Call]) -> bool) -> Vec<Call> {
        let mut rx = self.0.subscribe();
        match tokio::time::timeout(WAIT, rx.wait_for(|v| pred(v))).await {
            Ok(Ok(v)) => v.clone(),
            _ => panic!("timed out waiting for {what}; calls: {:#?}", self.calls()),
        }
    }

    /// Waits for a call of `event` by `plugin` and returns it.
    pub async fn wait_call(&self, plugin: &str, event: &str) -> Call {
        let calls =
            self.wait(&format!("{plugin}:{event}"), |v| v.iter().any(|c| c.plugin == plugin && c.event == event)).await;
        calls.into_iter().find(|c| c.plugin == plugin && c.event == event).unwrap()
    }
}

pub type CreateFn = Box<dyn Fn(&CreateContainerRequest) -> HandlerResult<CreateContainerResponse> + Send + Sync>;
pub type FailFn = Box<dyn Fn(&'static str) -> Option<HandlerError> + Send + Sync>;
pub type ValidateFn = Box<
    dyn Fn(&ValidateContainerAdjustmentRequest) -> HandlerResult<ValidateContainerAdjustmentResponse> + Send + Sync,
>;

/// A plugin that records every call and behaves as configured.
pub struct TestPlugin {
    pub full: String,
    pub rec: Recorder,
    pub events: EventMask,
    pub create: Option<CreateFn>,
    pub fail: Option<FailFn>,
    pub validate: Option<ValidateFn>,
    pub panic_on: Option<&'static str>,
}

impl TestPlugin {
    pub fn new(full: &str, rec: &Recorder, events: EventMask) -> Self {
        TestPlugin {
            full: full.into(),
            rec: rec.clone(),
            events,
            create: None,
            fail: None,
            validate: None,
            panic_on: None,
        }
    }

    pub fn on_create(
        mut self,
        f: impl Fn(&CreateContainerRequest) -> HandlerResult<CreateContainerResponse> + Send + Sync + 'static,
    ) -> Self {
        self.create = Some(Box::new(f));
        self
    }

    pub fn failing(mut self, f: impl Fn(&'static str) -> Option<HandlerError> + Send + Sync + 'static) -> Self {
        self.fail = Some(Box::new(f));
        self
    }

    pub fn on_validate(
        mut self,
        f: impl Fn(&ValidateContainerAdjustmentRequest) -> HandlerResult<ValidateContainerAdjustmentResponse>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.validate = Some(Box::new(f));
        self
    }

    fn on(&self, event: &'static str, ctx: &Context, detail: String) -> HandlerResult<()> {
        self.rec.push(Call { plugin: self.full.clone(), event, instance: ctx.instance_id().to_owned(), detail });
        if self.panic_on == Some(event) {
            panic!("{} panics in {event}", self.full);
        }
        match self.fail.as_ref().and_then(|f| f(event)) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn ids<'a>(it: impl Iterator<Item = &'a str>) -> String {
    it.collect::<Vec<_>>().join(",")
}

fn ctr_detail(c: &Option<Container>) -> String {
    c.as_ref().map(|c| format!("{} env={}", c.id, c.env.join(","))).unwrap_or_default()
}

fn pod_detail(p: &Option<PodSandbox>) -> String {
    p.as_ref().map(|p| p.id.clone()).unwrap_or_default()
}

impl Handler for TestPlugin {
    fn events(&self) -> EventMask {
        self.events
    }

    async fn configure(&self, ctx: Context, req: ConfigureRequest) -> HandlerResult<ConfigureResponse> {
        let detail = format!(
            "instance={} runtime={} node={} config={:?} caps={:?}",
            req.instance_id, req.runtime_name, req.node_name, req.config, req.capabilities
        );
        self.on("Configure", &ctx, detail)?;
        Ok(ConfigureResponse::default())
    }

    async fn synchronize(&self, ctx: Context, req: SynchronizeRequest) -> HandlerResult<SynchronizeResponse> {
        let detail = format!(
            "epoch={} reason={:?} more={} pods={} containers={}",
            req.epoch,
            req.reason(),
            req.more,
            ids(req.pods.iter().map(|p| p.id.as_str())),
            ids(req.containers.iter().map(|c| c.id.as_str()))
        );
        self.on("Synchronize", &ctx, detail)?;
        Ok(SynchronizeResponse::default())
    }

    async fn shutdown(&self, ctx: Context, req: ShutdownRequest) {
        let _ = self.on("Shutdown", &ctx, format!("{:?}", req.kind()));
    }

    async fn run_pod_sandbox(&self, ctx: Context, req: RunPodSandboxRequest) -> HandlerResult<RunPodSandboxResponse> {
        self.on("RunPodSandbox", &ctx, pod_detail(&req.pod))?;
        Ok(Default::default())
    }

    async fn update_pod_sandbox(
        &self,
        ctx: Context,
        req: UpdatePodSandboxRequest,
    ) -> HandlerResult<UpdatePodSandboxResponse> {
        self.on("UpdatePodSandbox", &ctx, pod_detail(&req.pod))?;
        Ok(Default::default())
    }

    async fn post_update_pod_sandbox(
        &self,
        ctx: Context,
        req: PostUpdatePodSandboxRequest,
    ) -> HandlerResult<PostUpdatePodSandboxResponse> {
        self.on("PostUpdatePodSandbox", &ctx, pod_detail(&req.pod))?;
        Ok(Default::default())
    }

    async fn stop_pod_sandbox(
        &self,
        ctx: Context,
        req: StopPodSandboxRequest,
    ) -> HandlerResult<StopPodSandboxResponse> {
        self.on("StopPodSandbox", &ctx, pod_detail(&req.pod))?;
        Ok(Default::default())
    }

    async fn remove_pod_sandbox(
        &self,
        ctx: Context,
        req: RemovePodSandboxRequest,
    ) -> HandlerResult<RemovePodSandboxResponse> {
        self.on("RemovePodSandbox", &ctx, pod_detail(&req.pod))?;
        Ok(Default::default())
    }

    async fn create_container(
        &self,
        ctx: Context,
        req: CreateContainerRequest,
    ) -> HandlerResult<CreateContainerResponse> {
        self.on("CreateContainer", &ctx, ctr_detail(&req.container))?;
        match &self.create {
            Some(f) => f(&req),
            None => Ok(Default::default()),
        }
    }

    async fn post_create_container(
        &self,
        ctx: Context,
        req: PostCreateContainerRequest,
    ) -> HandlerResult<PostCreateContainerResponse> {
        self.on("PostCreateContainer", &ctx, ctr_detail(&req.container))?;
        Ok(Default::default())
    }

    async fn start_container(&self, ctx: Context, req: StartContainerRequest) -> HandlerResult<StartContainerResponse> {
        self.on("StartContainer", &ctx, ctr_detail(&req.container))?;
        Ok(Default::default())
    }

    async fn post_start_container(
        &self,
        ctx: Context,
        req: PostStartContainerRequest,
    ) -> HandlerResult<PostStartContainerResponse> {
        self.on("PostStartContainer", &ctx, ctr_detail(&req.container))?;
        Ok(Default::default())
    }

    async fn update_container(
        &self,
        ctx: Context,
        req: UpdateContainerRequest,
    ) -> HandlerResult<UpdateContainerResponse> {
        self.on("UpdateContainer", &ctx, ctr_detail(&req.container))?;
        Ok(Default::default())
    }

    async fn post_update_container(
        &self,
        ctx: Context,
        req: PostUpdateContainerRequest,
    ) -> HandlerResult<PostUpdateContainerResponse> {
        self.on("PostUpdateContainer", &ctx, ctr_detail(&req.container))?;
        Ok(Default::default())
    }

    async fn stop_container(&self, ctx: Context, req: StopContainerRequest) -> HandlerResult<StopContainerResponse> {
        self.on("StopContainer", &ctx, ctr_detail(&req.container))?;
        Ok(Default::default())
    }

    async fn remove_container(
        &self,
        ctx: Context,
        req: RemoveContainerRequest,
    ) -> HandlerResult<RemoveContainerResponse> {
        self.on("RemoveContainer", &ctx, ctr_detail(&req.container))?;
        Ok(Default::default())
    }

    async fn validate_container_adjustment(
        &self,
        ctx: Context,
        req: ValidateContainerAdjustmentRequest,
    ) -> HandlerResult<ValidateContainerAdjustmentResponse> {
        self.on("ValidateContainerAdjustment", &ctx, ctr_detail(&req.container))?;
        match &self.validate {
            Some(f) => f(&req),
            None => Ok(Default::default()),
        }
    }
}

/// Every lifecycle event (no validation).
pub fn lifecycle() -> EventMask {
    EventMask::all_lifecycle()
}

/// The mask of `events`.
pub fn mask(events: &[Event]) -> EventMask {
    EventMask::of(events)
}

/// The grpcurl binary: `$GRPCURL` when set (`make rust-test` sets it to
/// .tmp/bin/grpcurl, which `make grpcurl` builds from tools/go.mod's pin),
/// otherwise built once per test process from the same pin with
/// `go -C ../../tools build` into `<target>/grpcurl-test/grpcurl`.
pub fn grpcurl_binary() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("GRPCURL").filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let tools = manifest.join("../../tools");
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| manifest.join("target"));
        let out = target.join("grpcurl-test").join("grpcurl");
        let go = std::env::var_os("GO").unwrap_or_else(|| "go".into());
        let st = Command::new(&go)
            .args(["build", "-o"])
            .arg(&out)
            .arg("github.com/fullstorydev/grpcurl/cmd/grpcurl")
            .current_dir(&tools)
            .env("GOWORK", "off")
            .status()
            .map_err(|e| {
                format!("running {go:?} build in {}: {e} (set GRPCURL to a grpcurl binary)", tools.display())
            })?;
        if !st.success() {
            return Err(format!(
                "go build grpcurl in {} failed: {st} (set GRPCURL, or run `make grpcurl`)",
                tools.display()
            ));
        }
        Ok(out)
    })
    .clone()
    .unwrap_or_else(|e| panic!("grpcurl binary: {e}"))
}

/// Runs `grpcurl -unix -plaintext ARGS...` (the socket is among ARGS, before
/// the verb) off the runtime's threads; returns its stdout, and panics with
/// its output when it fails.
pub async fn grpcurl(args: &[&str]) -> String {
    let bin = grpcurl_binary();
    let args: Vec<String> = ["-unix", "-plaintext"].iter().chain(args).map(|s| s.to_string()).collect();
    let shown = args.join(" ");
    let out = tokio::task::spawn_blocking(move || Command::new(&bin).args(&args).output())
        .await
        .expect("grpcurl task")
        .unwrap_or_else(|e| panic!("running grpcurl {shown}: {e}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "grpcurl {shown}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    stdout.into_owned()
}
