//! The conformance executor of the Rust SDK (docs/CONFORMANCE.md): a plugin
//! built with `nri_grpc::Plugin` that answers every call it receives with the
//! answer of the conformance harness's driver, so that the scenario catalog
//! of test/conformance runs through the SDK (`make sdk-conformance`). It
//! registers as `NRI_CONFORMANCE_REGISTRATION` says and forwards every call
//! to the PluginService at `NRI_CONFORMANCE_DRIVER`.

mod json;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use nri_grpc::tonic::transport::{Channel, Endpoint};
use nri_grpc::tonic::{Code, Request, Status};
use nri_grpc::v1beta1::plugin_service_client::PluginServiceClient;
use nri_grpc::v1beta1::*;
use nri_grpc::{
    Context, Event, EventMask, Exit, Handler, HandlerError, HandlerResult, METADATA_INSTANCE_ID, Plugin, PluginHandle,
};

/// Every handler of the SDK, each calling the same method of the driver.
struct Forwarder {
    driver: PluginServiceClient<Channel>,
}

impl Forwarder {
    /// The forwarded request: the call's remaining time and its instance id.
    fn request<T>(ctx: &Context, req: T, instance: &str) -> Request<T> {
        let mut r = Request::new(req);
        if let Some(left) = ctx.remaining() {
            r.set_timeout(left.max(Duration::from_millis(1)));
        }
        if let Ok(v) = instance.parse() {
            r.metadata_mut().insert(METADATA_INSTANCE_ID, v);
        }
        r
    }

    /// The answer to the incoming call for the driver's error: the same
    /// status. When the driver did not answer in time, neither does the
    /// executor: the call runs out at its own deadline (nrid cancels it,
    /// which drops this handler).
    async fn answer(ctx: &Context, s: Status) -> HandlerError {
        if matches!(s.code(), Code::DeadlineExceeded | Code::Cancelled)
            && let Some(d) = ctx.deadline()
            && d <= tokio::time::Instant::now() + Duration::from_millis(5)
        {
            tokio::time::sleep_until(d + Duration::from_secs(1)).await;
        }
        HandlerError::new(s.code(), s.message())
    }
}

macro_rules! forward {
    ($name:ident, $method:ident, $req:ty, $rsp:ty) => {
        async fn $name(&self, ctx: Context, req: $req) -> HandlerResult<$rsp> {
            let r = Self::request(&ctx, req, ctx.instance_id());
            match self.driver.clone().$method(r).await {
                Ok(rsp) => Ok(rsp.into_inner()),
                Err(s) => Err(Self::answer(&ctx, s).await),
            }
        }
    };
}

impl Handler for Forwarder {
    fn events(&self) -> EventMask {
        EventMask::all_lifecycle().with(Event::ValidateContainerAdjustment)
    }

    async fn configure(&self, ctx: Context, req: ConfigureRequest) -> HandlerResult<ConfigureResponse> {
        // Configure's request names the new instance.
        let id = if req.instance_id.is_empty() { ctx.instance_id().to_owned() } else { req.instance_id.clone() };
        let r = Self::request(&ctx, req, &id);
        match self.driver.clone().configure(r).await {
            Ok(rsp) => Ok(rsp.into_inner()),
            Err(s) => Err(Self::answer(&ctx, s).await),
        }
    }

    forward!(synchronize, synchronize, SynchronizeRequest, SynchronizeResponse);

    async fn shutdown(&self, ctx: Context, req: ShutdownRequest) {
        let r = Self::request(&ctx, req, ctx.instance_id());
        let _ = self.driver.clone().shutdown(r).await;
    }

    forward!(run_pod_sandbox, run_pod_sandbox, RunPodSandboxRequest, RunPodSandboxResponse);
    forward!(update_pod_sandbox, update_pod_sandbox, UpdatePodSandboxRequest, UpdatePodSandboxResponse);
    forward!(
        post_update_pod_sandbox,
        post_update_pod_sandbox,
        PostUpdatePodSandboxRequest,
        PostUpdatePodSandboxResponse
    );
    forward!(stop_pod_sandbox, stop_pod_sandbox, StopPodSandboxRequest, StopPodSandboxResponse);
    forward!(remove_pod_sandbox, remove_pod_sandbox, RemovePodSandboxRequest, RemovePodSandboxResponse);
    forward!(create_container, create_container, CreateContainerRequest, CreateContainerResponse);
    forward!(post_create_container, post_create_container, PostCreateContainerRequest, PostCreateContainerResponse);
    forward!(start_container, start_container, StartContainerRequest, StartContainerResponse);
    forward!(post_start_container, post_start_container, PostStartContainerRequest, PostStartContainerResponse);
    forward!(update_container, update_container, UpdateContainerRequest, UpdateContainerResponse);
    forward!(post_update_container, post_update_container, PostUpdateContainerRequest, PostUpdateContainerResponse);
    forward!(stop_container, stop_container, StopContainerRequest, StopContainerResponse);
    forward!(remove_container, remove_container, RemoveContainerRequest, RemoveContainerResponse);
    forward!(
        validate_container_adjustment,
        validate_container_adjustment,
        ValidateContainerAdjustmentRequest,
        ValidateContainerAdjustmentResponse
    );
}

/// A lazy connection to the driver's unix socket.
fn connect(path: String) -> Channel {
    Endpoint::from_static("http://localhost").connect_with_connector_lazy(tower::service_fn(
        move |_: nri_grpc::tonic::codegen::http::Uri| {
            let path = path.clone();
            async move {
                let s = tokio::net::UnixStream::connect(&path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
            }
        },
    ))
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(tracing::Level::INFO).init();
    let Ok(driver) = std::env::var("NRI_CONFORMANCE_DRIVER") else {
        eprintln!("conformance executor: NRI_CONFORMANCE_DRIVER is not set");
        return ExitCode::from(2);
    };
    let reg = match json::registration(&std::env::var("NRI_CONFORMANCE_REGISTRATION").unwrap_or_else(|_| "{}".into())) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("conformance executor: NRI_CONFORMANCE_REGISTRATION: {e}");
            return ExitCode::from(2);
        }
    };
    let driver = PluginServiceClient::new(connect(driver)).max_decoding_message_size(16 << 20);
    let mut b = Plugin::builder(Forwarder { driver }).name(reg.plugin_name).index(reg.plugin_idx);
    if let Some(c) = reg.capabilities {
        if c.max_concurrent_calls != 0 {
            b = b.max_concurrent_calls(c.max_concurrent_calls);
        }
        if c.max_message_size != 0 {
            b = b.max_message_size(c.max_message_size);
        }
        b = b.dry_run(c.dry_run).resync(c.resync);
    }
    if let Some(t) = reg.timeouts {
        if let Some(d) = t.request {
            b = b.request_timeout(duration(d));
        }
        if let Some(d) = t.synchronize {
            b = b.synchronize_timeout(duration(d));
        }
        for et in t.events {
            if let (Ok(e), Some(d)) = (Event::try_from(et.event), et.timeout) {
                b = b.event_timeout(e, duration(d));
            }
        }
    }
    if !reg.selectors.is_empty() {
        b = b.selectors(reg.selectors);
    }
    if reg.status != 0 || !reg.status_reason.is_empty() {
        let st = PluginStatus::try_from(reg.status).unwrap_or(PluginStatus::Unspecified);
        b = b.status(st, reg.status_reason);
    }
    let plugin = match b.build() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("conformance executor: {e}");
            return ExitCode::FAILURE;
        }
    };
    commands(plugin.handle());
    match plugin.run_until_signal().await {
        Ok(Exit::Stopped | Exit::Replaced) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance executor: {e}");
            ExitCode::FAILURE
        }
    }
}

fn duration(d: prost_types::Duration) -> Duration {
    Duration::new(d.seconds.max(0) as u64, d.nanos.max(0) as u32)
}

/// Runs the harness's commands (docs/CONFORMANCE.md, "Commands"): one per
/// line of standard input, each made through the SDK's own API and answered
/// with one line on standard output.
fn commands(h: PluginHandle) {
    let rt = tokio::runtime::Handle::current();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { return };
            let h = h.clone();
            rt.spawn(async move {
                let f: Vec<&str> = line.split('\t').collect();
                let answer = match command(&h, &f).await {
                    Ok(v) => format!("nri-conformance-reply\t{}\tok\t{v}\n", f[0]),
                    Err(e) => format!("nri-conformance-reply\t{}\terror\t{}\n", f[0], e.replace('\n', " ")),
                };
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(answer.as_bytes()).and_then(|()| out.flush());
            });
        }
    });
}

/// One command, once the SDK holds its registration (the harness sends it
/// after the server answered; the SDK may not have read the answer yet).
async fn command(h: &PluginHandle, f: &[&str]) -> Result<String, String> {
    h.wait_registered().await;
    match f {
        [_, "set_status", st, reason] => {
            let st = PluginStatus::from_str_name(st).ok_or_else(|| format!("unknown status {st:?}"))?;
            h.set_status(st, *reason).await.map(|()| String::new()).map_err(|e| e.to_string())
        }
        [_, "request_resync", reason] => {
            h.request_resync(*reason).await.map(|e| e.to_string()).map_err(|e| e.to_string())
        }
        _ => Err(format!("unknown command {:?}", f.get(1..).unwrap_or_default().join(" "))),
    }
}
