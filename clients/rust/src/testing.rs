//! A real nrid for plugin tests (cargo feature `testing`).
//!
//! [`Nrid::start`] runs the nrid binary on a socket in a short temporary
//! directory (`/tmp/nri-rs-…`: unix socket paths are limited to 108 bytes),
//! with its plugin socket directory beside it, and drives it as a remote
//! runtime does: [`Nrid::adaptation`] is an `AdaptationService` client for the
//! lifecycle entry points, and [`Nrid::attach`] provides the runtime's state
//! over an `Attach` stream (attaching again makes nrid resynchronize its
//! plugins) and records the unsolicited updates nrid asks the runtime to
//! apply.
//!
//! The binary is `$NRID_BIN` (or `$NRID`) when set; otherwise it is built once per test
//! process with `go build -o <target>/nrid-test/nrid ./cmd/nrid` in the
//! repository root (`../..` from this crate).
//!
//! ```no_run
//! # async fn demo() {
//! use nri_grpc::testing::{Nrid, container, pod};
//! let mut nrid = Nrid::start().await;
//! nrid.attach(vec![pod("p0")], vec![container("p0", "c0")]).await;
//! // ... start plugins with nrid.plugin_builder(handler, "10", "name") ...
//! let rsp = nrid.create_container(pod("p0"), container("p0", "c1")).await;
//! # }
//! ```
//!
//! Helpers panic with a message (and nrid's log) on failure, as test
//! helpers do. Everything waits with generous timeouts ([`WAIT`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, oneshot, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::handler::Handler;
use crate::plugin::{Plugin, PluginBuilder};
use crate::v1beta1::adaptation_service_client::AdaptationServiceClient;
use crate::v1beta1::admin_service_client::AdminServiceClient;
use crate::v1beta1::attach_request::Message as AttachMsg;
use crate::v1beta1::attach_response::Message as AttachRsp;
use crate::v1beta1::*;

/// How long the helpers wait for anything. Generous on purpose: tests never
/// depend on it being reached.
pub const WAIT: Duration = Duration::from_secs(30);

/// The runtime name the harness attaches with.
pub const RUNTIME_NAME: &str = "rust-testing";
/// The node name nrid runs with.
pub const NODE_NAME: &str = "rust-test-node";

/// The nrid binary: `$NRID_BIN` (or `$NRID`), or built once per process from the
/// repository with `go build` (`$GO`, default `go`).
pub fn nrid_binary() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        // NRID is what the Python and TypeScript tests read.
        if let Some(p) = ["NRID_BIN", "NRID"].iter().find_map(|k| std::env::var_os(k).filter(|p| !p.is_empty())) {
            return Ok(PathBuf::from(p));
        }
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = manifest.join("../..");
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| manifest.join("target"));
        let out = target.join("nrid-test").join("nrid");
        let go = std::env::var_os("GO").unwrap_or_else(|| "go".into());
        let st =
            Command::new(&go).args(["build", "-o"]).arg(&out).arg("./cmd/nrid").current_dir(&root).status().map_err(
                |e| format!("running {go:?} build in {}: {e} (set NRID_BIN to an nrid binary)", root.display()),
            )?;
        if !st.success() {
            return Err(format!("go build ./cmd/nrid in {} failed: {st}", root.display()));
        }
        Ok(out)
    })
    .clone()
    .unwrap_or_else(|e| panic!("nrid binary: {e}"))
}

/// Options of [`Nrid::start_with`].
#[derive(Clone, Debug, Default)]
pub struct NridOptions {
    /// Content of an nrid configuration file (TOML, see deploy/nrid.toml).
    /// The harness sets the socket, plugin directory and node name by flag.
    pub config: Option<String>,
}

/// A running nrid with a fake, attachable runtime. Dropping it kills nrid
/// and removes its directory (and prints nrid's log when the thread is
/// panicking).
pub struct Nrid {
    /// The temporary directory.
    pub dir: PathBuf,
    /// nrid's socket.
    pub socket: PathBuf,
    /// nrid's plugin socket directory.
    pub plugin_dir: PathBuf,
    opts: NridOptions,
    child: Option<Child>,
    log: watch::Sender<String>,
    channel: Channel,
    attachment: Option<Attachment>,
    state: (Vec<PodSandbox>, Vec<Container>),
    applied: watch::Sender<Vec<ApplyUpdates>>,
    generation: u32,
}

static DIR_SEQ: AtomicU64 = AtomicU64::new(0);

fn temp_dir() -> PathBuf {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let n = DIR_SEQ.fetch_add(1, Ordering::SeqCst);
    let dir = PathBuf::from(format!("/tmp/nri-rs-{}-{n}-{nanos:x}", std::process::id()));
    std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// A channel to a unix socket.
pub fn unix_channel(path: &Path) -> Channel {
    let path = path.to_owned();
    Endpoint::from_static("http://localhost").connect_with_connector_lazy(tower::service_fn(
        move |_: tonic::codegen::http::Uri| {
            let path = path.clone();
            async move {
                let s = tokio::net::UnixStream::connect(&path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
            }
        },
    ))
}

impl Nrid {
    /// Starts nrid with the default configuration.
    pub async fn start() -> Nrid {
        Self::start_with(NridOptions::default()).await
    }

    /// Starts nrid with `opts`.
    pub async fn start_with(opts: NridOptions) -> Nrid {
        let dir = temp_dir();
        let socket = dir.join("nrid.sock");
        let plugin_dir = dir.join("p");
        std::fs::create_dir(&plugin_dir).expect("creating the plugin directory");
        let (log, _) = watch::channel(String::new());
        let (applied, _) = watch::channel(vec![]);
        let mut n = Nrid {
            channel: unix_channel(&socket),
            dir,
            socket,
            plugin_dir,
            opts,
            child: None,
            log,
            attachment: None,
            state: (vec![], vec![]),
            applied,
            generation: 0,
        };
        n.spawn().await;
        n
    }

    async fn spawn(&mut self) {
        self.generation += 1;
        let generation = self.generation;
        let start = self.log.borrow().len();
        let mut cmd = Command::new(nrid_binary());
        cmd.arg("--socket").arg(&self.socket).arg("--plugin-socket-dir").arg(&self.plugin_dir).args([
            "--node-name",
            NODE_NAME,
            "--log-level",
            "debug",
            "--runtime-required",
        ]);
        if let Some(cfg) = &self.opts.config {
            let path = self.dir.join("nrid.toml");
            std::fs::write(&path, cfg).expect("writing the nrid configuration");
            cmd.arg("--config").arg(path);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", nrid_binary().display()));
        for out in [
            child.stdout.take().map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
            child.stderr.take().map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let log = self.log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    log.send_modify(|l| {
                        l.push_str(&line);
                        l.push('\n');
                    });
                }
                log.send_modify(|l| l.push_str(&format!("<nrid {generation} output closed>\n")));
            });
        }
        self.child = Some(child);
        let closed = format!("<nrid {generation} output closed>");
        let mut rx = self.log.subscribe();
        let ok = tokio::time::timeout(
            WAIT,
            rx.wait_for(|l| l[start..].contains("msg=serving") || l[start..].contains(&closed)),
        )
        .await;
        if !matches!(ok, Ok(Ok(ref l)) if l[start..].contains("msg=serving")) {
            panic!("nrid did not start serving:\n{}", self.logs());
        }
    }

    /// nrid's log so far (stdout and stderr).
    pub fn logs(&self) -> String {
        self.log.borrow().clone()
    }

    /// Waits until nrid's log contains `needle`, and returns the log.
    pub async fn wait_log(&self, needle: &str) -> String {
        let mut rx = self.log.subscribe();
        match tokio::time::timeout(WAIT, rx.wait_for(|l| l.contains(needle))).await {
            Ok(Ok(l)) => l.clone(),
            _ => panic!("nrid's log did not show {needle:?} within {WAIT:?}:\n{}", self.logs()),
        }
    }

    /// nrid's address as a gRPC target (`unix:///…`).
    pub fn server_address(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// The endpoint path of plugin `full` (`NN-name`) in the plugin
    /// directory.
    pub fn endpoint(&self, full: &str) -> PathBuf {
        self.plugin_dir.join(format!("{full}.sock"))
    }

    /// A plugin builder for this nrid: server address, endpoint in the
    /// plugin directory, name and index, no `NRI_GRPC_*` environment, and a
    /// short re-registration backoff (10 ms to 500 ms).
    pub fn plugin_builder<H: Handler>(&self, handler: H, index: &str, name: &str) -> PluginBuilder<H> {
        Plugin::builder(handler)
            .use_env(false)
            .name(name)
            .index(index)
            .server_address(self.server_address())
            .endpoint(self.endpoint(&format!("{index}-{name}")).to_string_lossy().into_owned())
            .backoff(Duration::from_millis(10), Duration::from_millis(500))
    }

    /// An AdaptationService client (the runtime's entry points).
    pub fn adaptation(&self) -> AdaptationServiceClient<Channel> {
        AdaptationServiceClient::new(self.channel.clone())
    }

    /// An AdminService client.
    pub fn admin(&self) -> AdminServiceClient<Channel> {
        AdminServiceClient::new(self.channel.clone())
    }

    /// The registered plugins (AdminService.ListPlugins), in dispatch order.
    pub async fn plugins(&self) -> Vec<PluginInfo> {
        self.admin().list_plugins(ListPluginsRequest {}).await.expect("ListPlugins").into_inner().plugins
    }

    /// Waits until the registered plugins' full names are `names` (in
    /// dispatch order), polling ListPlugins.
    pub async fn wait_plugins(&self, names: &[&str]) -> Vec<PluginInfo> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let got = self.plugins().await;
            let full: Vec<String> =
                got.iter().filter_map(|p| p.plugin.as_ref()).map(|p| format!("{}-{}", p.index, p.name)).collect();
            if full == names {
                return got;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("registered plugins are {full:?}, not {names:?}:\n{}", self.logs());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Attaches the runtime with `pods` and `containers` (detaching the
    /// attached one first: nrid then resynchronizes every plugin), and waits
    /// until nrid is healthy (it runs with `--runtime-required`).
    pub async fn attach(&mut self, pods: Vec<PodSandbox>, containers: Vec<Container>) {
        self.detach().await;
        self.state = (pods.clone(), containers.clone());
        let deadline = tokio::time::Instant::now() + WAIT;
        let att = loop {
            match Attachment::open(self.channel.clone(), pods.clone(), containers.clone(), self.applied.clone()).await {
                Ok(a) => break a,
                // The previous attachment may still be being dropped.
                Err(st) if st.code() == Code::AlreadyExists && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(st) => panic!("attaching the runtime: {st}\n{}", self.logs()),
            }
        };
        self.attachment = Some(att);
        self.wait_serving().await;
    }

    /// Waits until nrid's health is SERVING.
    pub async fn wait_serving(&self) {
        use tonic_health::pb::health_client::HealthClient;
        use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
        let watch = async {
            let mut c = HealthClient::new(self.channel.clone());
            let mut s = c.watch(HealthCheckRequest { service: String::new() }).await?.into_inner();
            while let Some(m) = s.message().await? {
                if m.status() == ServingStatus::Serving {
                    return Ok(());
                }
            }
            Err(Status::unknown("the health watch ended"))
        };
        match tokio::time::timeout(WAIT, watch).await {
            Ok(Ok(())) => {}
            Ok(Err(st)) => panic!("watching nrid's health: {st}\n{}", self.logs()),
            Err(_) => panic!("nrid did not become healthy:\n{}", self.logs()),
        }
    }

    /// Ends the runtime's attachment, if any, and waits until nrid dropped
    /// it.
    pub async fn detach(&mut self) {
        if let Some(a) = self.attachment.take() {
            a.close().await;
        }
    }

    /// The updates and evictions nrid asked the attached runtime to apply
    /// (unsolicited updates), waiting until there are at least `n`.
    pub async fn wait_applied(&self, n: usize) -> Vec<ApplyUpdates> {
        let mut rx = self.applied.subscribe();
        match tokio::time::timeout(WAIT, rx.wait_for(|v| v.len() >= n)).await {
            Ok(Ok(v)) => v.clone(),
            _ => panic!("nrid did not apply {n} update requests:\n{}", self.logs()),
        }
    }

    /// Sends a signal to nrid.
    pub fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            // SAFETY: kill(2) with a pid of our own child.
            unsafe { libc::kill(c.id() as libc::pid_t, sig) };
        }
    }

    /// Stops nrid gracefully (SIGTERM: plugins get
    /// `SHUTDOWN_KIND_SERVER_STOPPING`) and waits for it to exit.
    pub async fn stop(&mut self) {
        self.detach().await;
        self.signal(libc::SIGTERM);
        self.wait_exit().await;
    }

    /// Kills nrid (SIGKILL: a crash, plugins get no Shutdown).
    pub async fn kill(&mut self) {
        self.attachment = None;
        self.signal(libc::SIGKILL);
        self.wait_exit().await;
    }

    async fn wait_exit(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let waited = tokio::task::spawn_blocking(move || {
            let r = child.wait();
            (child, r)
        });
        match tokio::time::timeout(WAIT, waited).await {
            Ok(Ok((_, Ok(_)))) => {}
            other => panic!("nrid did not exit: {other:?}\n{}", self.logs()),
        }
    }

    /// Starts nrid again on the same socket and directories (after
    /// [`stop`](Self::stop) or [`kill`](Self::kill)) and attaches the runtime
    /// with the last state.
    pub async fn restart(&mut self) {
        if self.child.is_some() {
            self.stop().await;
        }
        self.spawn().await;
        let (pods, ctrs) = self.state.clone();
        self.attach(pods, ctrs).await;
    }

    /// `AdaptationService.RunPodSandbox`.
    pub async fn run_pod_sandbox(&self, pod: PodSandbox) -> Result<AdaptationServiceRunPodSandboxResponse, Status> {
        self.adaptation()
            .run_pod_sandbox(AdaptationServiceRunPodSandboxRequest { pod: Some(pod) })
            .await
            .map(|r| r.into_inner())
    }

    /// `AdaptationService.CreateContainer`: the merged, validated result.
    pub async fn create_container(
        &self,
        pod: PodSandbox,
        ctr: Container,
    ) -> Result<AdaptationServiceCreateContainerResponse, Status> {
        self.adaptation()
            .create_container(AdaptationServiceCreateContainerRequest { pod: Some(pod), container: Some(ctr) })
            .await
            .map(|r| r.into_inner())
    }
}

impl Drop for Nrid {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            eprintln!("---- nrid log ({}) ----\n{}", self.dir.display(), self.logs());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One Attach stream: it answers snapshot requests with the state and
/// records ApplyUpdates (answering them as applied).
struct Attachment {
    close: oneshot::Sender<()>,
    done: oneshot::Receiver<()>,
}

impl Attachment {
    async fn open(
        channel: Channel,
        pods: Vec<PodSandbox>,
        containers: Vec<Container>,
        applied: watch::Sender<Vec<ApplyUpdates>>,
    ) -> Result<Attachment, Status> {
        let (tx, rx) = mpsc::channel(16);
        let hello = AttachHello {
            runtime_name: RUNTIME_NAME.into(),
            runtime_version: "v1".into(),
            node_name: String::new(),
            max_message_size: 0,
        };
        tx.send(AttachRequest { message: Some(AttachMsg::Hello(hello)) }).await.expect("receiver alive");
        let mut client = AdaptationServiceClient::new(channel);
        let mut stream = client.attach(ReceiverStream::new(rx)).await?.into_inner();
        match stream.message().await? {
            Some(AttachResponse { message: Some(AttachRsp::Attached(_)) }) => {}
            other => return Err(Status::internal(format!("the first Attach answer is not Attached: {other:?}"))),
        }
        let (close, mut close_rx) = oneshot::channel::<()>();
        let (done_tx, done) = oneshot::channel();
        tokio::spawn(async move {
            let mut tx = Some(tx);
            loop {
                let msg = tokio::select! {
                    m = stream.message() => m,
                    _ = &mut close_rx, if tx.is_some() => {
                        tx = None; // half-close: nrid ends the stream
                        continue;
                    }
                };
                let Ok(Some(msg)) = msg else { break };
                let reply = match msg.message {
                    Some(AttachRsp::SnapshotRequest(r)) => AttachMsg::Snapshot(StateSnapshot {
                        request_id: r.request_id,
                        pods: pods.clone(),
                        containers: containers.clone(),
                        more: false,
                    }),
                    Some(AttachRsp::ApplyUpdates(u)) => {
                        let id = u.request_id;
                        applied.send_modify(|v| v.push(u));
                        AttachMsg::UpdateResult(UpdateResult { request_id: id, ..Default::default() })
                    }
                    _ => continue,
                };
                if let Some(tx) = &tx {
                    let _ = tx.send(AttachRequest { message: Some(reply) }).await;
                }
            }
            let _ = done_tx.send(());
        });
        Ok(Attachment { close, done })
    }

    async fn close(self) {
        let _ = self.close.send(());
        let _ = tokio::time::timeout(WAIT, self.done).await;
    }
}

/// A pod sandbox `id` (name `id`, namespace `default`).
pub fn pod(id: &str) -> PodSandbox {
    PodSandbox {
        id: id.into(),
        name: id.into(),
        uid: format!("uid-{id}"),
        namespace: "default".into(),
        ..Default::default()
    }
}

/// A pod sandbox `id` with annotations.
pub fn pod_with_annotations(id: &str, annotations: &[(&str, &str)]) -> PodSandbox {
    let mut p = pod(id);
    p.annotations = annotations.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    p
}

/// A container `id` (name `id`) of pod `pod_id`.
pub fn container(pod_id: &str, id: &str) -> Container {
    Container {
        id: id.into(),
        pod_sandbox_id: pod_id.into(),
        name: id.into(),
        state: ContainerState::Created as i32,
        args: vec!["sleep".into(), "inf".into()],
        env: vec!["PATH=/usr/bin:/bin".into()],
        ..Default::default()
    }
}
