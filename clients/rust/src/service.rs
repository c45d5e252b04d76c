//! PluginService on top of a Handler, behind authentication and the
//! instance-id check.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tonic::body::Body;
use tonic::codegen::http;
use tonic::metadata::MetadataMap;
use tonic::transport::server::UdsConnectInfo;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_server::HealthServer;
use tonic_health::server::HealthService;
use tracing::{debug, error, info, warn};

use crate::events::{EventMask, event_name};
use crate::handler::{Context, Handler};
use crate::plugin::{METADATA_INSTANCE_ID, PluginHandle, Shared, SyncPages};
use crate::v1beta1::plugin_service_server::{PluginService, PluginServiceServer};
use crate::v1beta1::*;
use crate::{HandlerError, HandlerResult};

const PLUGIN_SERVICE_PREFIX: &str = "/nri.v1beta1.PluginService/";
const CONFIGURE_METHOD: &str = "/nri.v1beta1.PluginService/Configure";
const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";
const REFLECTION_V1_PREFIX: &str = "/grpc.reflection.v1.ServerReflection/";
const REFLECTION_V1ALPHA_PREFIX: &str = "/grpc.reflection.v1alpha.ServerReflection/";

/// The services reflection lists: what the endpoint serves, as the Go SDK
/// lists them.
const SERVED: [&str; 4] = [
    "nri.v1beta1.PluginService",
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// A gRPC service of the endpoint, boxed (tonic-reflection's servers have
/// unnameable types).
type BoxedService = tower::util::BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// The services of the endpoint: PluginService, health and reflection (v1
/// and v1alpha), behind the peer-credential check, and the instance-id check
/// of PluginService calls other than Configure.
pub(crate) struct Router<H> {
    plugin: PluginServiceServer<Service<H>>,
    health: HealthServer<HealthService>,
    reflection_v1: BoxedService,
    reflection_v1alpha: BoxedService,
    shared: Arc<Shared>,
}

impl<H> Clone for Router<H> {
    fn clone(&self) -> Self {
        Router {
            plugin: self.plugin.clone(),
            health: self.health.clone(),
            reflection_v1: self.reflection_v1.clone(),
            reflection_v1alpha: self.reflection_v1alpha.clone(),
            shared: self.shared.clone(),
        }
    }
}

/// The reflection builder: nri.v1beta1 with its comments and health, listing
/// [`SERVED`] only (the descriptor set also describes RuntimeService,
/// AdaptationService and AdminService, which a plugin does not serve).
fn reflection() -> tonic_reflection::server::Builder<'static> {
    let b = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET);
    SERVED.iter().fold(b, |b, s| b.with_service_name(*s))
}

impl<H: Handler> Router<H> {
    /// Fails only when a built-in descriptor set does not decode.
    pub(crate) fn new(
        svc: Service<H>,
        health: HealthServer<HealthService>,
        shared: Arc<Shared>,
        max: usize,
    ) -> Result<Self, String> {
        let plugin = PluginServiceServer::new(svc).max_decoding_message_size(max).max_encoding_message_size(max);
        let reflection_v1 = BoxedService::new(reflection().build_v1().map_err(|e| format!("reflection: {e}"))?);
        let reflection_v1alpha =
            BoxedService::new(reflection().build_v1alpha().map_err(|e| format!("reflection: {e}"))?);
        Ok(Router { plugin, health, reflection_v1, reflection_v1alpha, shared })
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

impl<H: Handler> tower::Service<http::Request<Body>> for Router<H> {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let path = req.uri().path().to_owned();
        if let Err(st) = authenticate(&self.shared, req.extensions()) {
            warn!(plugin = %self.shared.full, method = %path, error = st.message(), "refused a call");
            return Box::pin(async move { Ok(st.into_http()) });
        }
        if path.starts_with(PLUGIN_SERVICE_PREFIX) {
            if path != CONFIGURE_METHOD {
                let id = req.headers().get(METADATA_INSTANCE_ID).and_then(|v| v.to_str().ok()).unwrap_or("");
                if let Err(st) = check_instance(&self.shared, id) {
                    debug!(plugin = %self.shared.full, method = %path, error = st.message(),
                        "refused a call for another instance");
                    return Box::pin(async move { Ok(st.into_http()) });
                }
            }
            let deadline = call_deadline(req.headers());
            let fut = tower::Service::call(&mut self.plugin, req);
            return by_deadline(deadline, self.shared.full.clone(), fut);
        }
        if path.starts_with(HEALTH_PREFIX) {
            let fut = tower::Service::call(&mut self.health, req);
            return Box::pin(fut);
        }
        if path.starts_with(REFLECTION_V1_PREFIX) {
            return tower::Service::call(&mut self.reflection_v1, req);
        }
        if path.starts_with(REFLECTION_V1ALPHA_PREFIX) {
            return tower::Service::call(&mut self.reflection_v1alpha, req);
        }
        let st = Status::unimplemented(format!("{path} is not served by plugin {}", self.shared.full));
        Box::pin(async move { Ok(st.into_http()) })
    }
}

/// Lets through root and nrid's uid (learned from the peer credentials of
/// the plugin's own connection to nrid), or anybody with debug access.
fn authenticate(shared: &Shared, ext: &http::Extensions) -> Result<(), Status> {
    if shared.debug_access {
        return Ok(());
    }
    let Some(cred) = ext.get::<UdsConnectInfo>().and_then(|i| i.peer_cred) else {
        return Err(Status::unauthenticated(format!("plugin {}: the caller has no peer credentials", shared.full)));
    };
    authorize_uid(shared.server_uid.load(Ordering::SeqCst), cred.uid(), &shared.full)
}

/// The peer-credential rule: root and the server's uid (`server_uid`, -1
/// while unknown) may call.
pub(crate) fn authorize_uid(server_uid: i64, uid: u32, plugin: &str) -> Result<(), Status> {
    if uid == 0 || i64::from(uid) == server_uid {
        return Ok(());
    }
    let server = if server_uid >= 0 {
        format!("uid {server_uid}")
    } else {
        "unknown until the plugin has connected to it".to_owned()
    };
    Err(Status::permission_denied(format!(
        "uid {uid} may not call plugin {plugin}: only root and the NRI server's uid ({server}) may; \
         the plugin's debug_access option lets anybody call"
    )))
}

/// Refuses a call addressed to another instance than the current one with
/// UNAVAILABLE, which nrid never takes for a veto.
fn check_instance(shared: &Shared, id: &str) -> Result<(), Status> {
    let st = shared.lock();
    match st.instance.as_deref() {
        None => Err(Status::unavailable(format!(
            "plugin {} is not registered; the call names instance {id:?}",
            shared.full
        ))),
        Some(cur) if cur != id => Err(Status::unavailable(format!(
            "plugin {}: the call names instance {id:?}, the current instance is {cur:?}",
            shared.full
        ))),
        Some(_) => Ok(()),
    }
}

/// When the SDK answers a call whose `grpc-timeout` passes: tonic answers
/// CANCELLED ("Timeout expired") then, which nrid takes for "the plugin gave
/// up", not for a timeout (no eviction), whenever that answer beats nrid's
/// own deadline. This deadline is taken in the same synchronous call as
/// tonic's (`Router::call`), [`DEADLINE_MARGIN`] earlier, and the future of
/// [`by_deadline`] is polled before tonic's timer: the SDK answers first.
fn call_deadline(headers: &http::HeaderMap) -> Option<tokio::time::Instant> {
    headers
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_grpc_timeout)
        .map(|d| tokio::time::Instant::now() + d.saturating_sub(DEADLINE_MARGIN))
}

/// `fut`, or DEADLINE_EXCEEDED once `deadline` passes (dropping `fut`).
fn by_deadline<F>(
    deadline: Option<tokio::time::Instant>,
    full: String,
    fut: F,
) -> BoxFuture<Result<http::Response<Body>, Infallible>>
where
    F: Future<Output = Result<http::Response<Body>, Infallible>> + Send + 'static,
{
    let Some(deadline) = deadline else {
        return Box::pin(fut);
    };
    Box::pin(async move {
        match tokio::time::timeout_at(deadline, fut).await {
            Ok(r) => r,
            Err(_) => Ok(Status::deadline_exceeded(format!(
                "plugin {full}: the call's deadline passed before the handler answered"
            ))
            .into_http()),
        }
    })
}

/// How much earlier than tonic's own timer the SDK answers a call whose
/// deadline passed (see `Router::call`).
const DEADLINE_MARGIN: Duration = Duration::from_millis(1);

/// The deadline of a `grpc-timeout` value ("1999m").
fn parse_grpc_timeout(v: &str) -> Option<Duration> {
    if v.len() < 2 {
        return None;
    }
    let (n, unit) = v.split_at(v.len() - 1);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.checked_mul(3600)?),
        "M" => Duration::from_secs(n.checked_mul(60)?),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

fn metadata_str(md: &MetadataMap, key: &str) -> String {
    md.get(key).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// Polls `f`, turning a panic into an error.
async fn catch_unwind<F: Future>(f: F) -> Result<F::Output, Box<dyn Any + Send>> {
    let mut f = std::pin::pin!(f);
    std::future::poll_fn(move |cx| match std::panic::catch_unwind(AssertUnwindSafe(|| f.as_mut().poll(cx))) {
        Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(p) => Poll::Ready(Err(p)),
    })
    .await
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".to_owned())
}

/// PluginService on top of the plugin's handler.
pub(crate) struct Service<H> {
    pub(crate) handler: Arc<H>,
    pub(crate) shared: Arc<Shared>,
}

impl<H: Handler> Service<H> {
    fn context(&self, md: &MetadataMap, instance_id: Option<String>) -> Context {
        Context {
            instance_id: instance_id.unwrap_or_else(|| metadata_str(md, METADATA_INSTANCE_ID)),
            node_name: metadata_str(md, "nri-node-name"),
            runtime_name: metadata_str(md, "nri-runtime-name"),
            deadline: md
                .get("grpc-timeout")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_grpc_timeout)
                .map(|d| tokio::time::Instant::now() + d),
            traceparent: md.get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_owned),
            plugin: PluginHandle { shared: self.shared.clone() },
        }
    }

    /// Runs a handler and turns its answer into the call's result.
    async fn run<T>(&self, what: &str, f: impl Future<Output = HandlerResult<T>>) -> Result<T, Status> {
        match catch_unwind(f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                debug!(plugin = %self.shared.full, event = what, error = %e, "handler failed");
                Err(e.into_status())
            }
            Err(p) => {
                let m = panic_message(&*p);
                error!(plugin = %self.shared.full, event = what, panic = %m, "handler panicked");
                Err(Status::internal(format!("handler panicked: {m}")))
            }
        }
    }

    async fn event<Req, Rsp, Fut>(
        &self,
        e: Event,
        request: Request<Req>,
        f: impl FnOnce(Context, Req) -> Fut,
    ) -> Result<Response<Rsp>, Status>
    where
        Fut: Future<Output = HandlerResult<Rsp>>,
    {
        let ctx = self.context(request.metadata(), None);
        let req = request.into_inner();
        self.run(event_name(e), f(ctx, req)).await.map(Response::new)
    }
}

#[tonic::async_trait]
impl<H: Handler> PluginService for Service<H> {
    async fn configure(&self, request: Request<ConfigureRequest>) -> Result<Response<ConfigureResponse>, Status> {
        let shared = &self.shared;
        let mut id = request.get_ref().instance_id.clone();
        if id.is_empty() {
            id = metadata_str(request.metadata(), METADATA_INSTANCE_ID);
        }
        {
            let mut st = shared.lock();
            if !st.pending {
                return Err(Status::unavailable(format!(
                    "plugin {} has no registration pending; Configure for instance {id:?} refused",
                    shared.full
                )));
            }
            st.instance = Some(id.clone());
            st.sync = None;
        }
        let req = request.get_ref();
        debug!(plugin = %shared.full, instance = %id, runtime = %req.runtime_name, runtime_version = %req.runtime_version,
            node = %req.node_name, server = %req.server_version, "configuring");
        let ctx = self.context(request.metadata(), Some(id));
        let req = request.into_inner();
        let rsp = match self.run("Configure", self.handler.configure(ctx, req)).await {
            Ok(r) => r,
            Err(st) => {
                error!(plugin = %shared.full, code = ?st.code(), error = st.message(), "Configure failed");
                return Err(st);
            }
        };
        let mut events = shared.events;
        if rsp.events != 0 {
            let asked = EventMask::from_bits(rsp.events);
            if asked.bits() != rsp.events || !shared.events.is_superset_of(asked) {
                let st = Status::failed_precondition(format!(
                    "Configure subscribed to events the plugin does not handle: {:?} (Handler::events is {:?})",
                    EventMask::from_bits(rsp.events & !shared.events.bits()),
                    shared.events
                ));
                error!(plugin = %shared.full, error = st.message(), "Configure failed");
                return Err(st);
            }
            events = asked;
        }
        Ok(Response::new(ConfigureResponse {
            events: events.bits(),
            failure_policy: rsp.failure_policy.or(shared.failure_policy),
        }))
    }

    async fn synchronize(&self, request: Request<SynchronizeRequest>) -> Result<Response<SynchronizeResponse>, Status> {
        let ctx = self.context(request.metadata(), None);
        let page = request.into_inner();
        let epoch = page.epoch.max(1);
        let full = {
            let mut st = self.shared.lock();
            let instance = st.instance.clone().unwrap_or_default();
            let acc = match st.sync.take() {
                Some(acc) if acc.instance == instance && acc.epoch == epoch => acc,
                _ => SyncPages {
                    instance,
                    epoch,
                    req: SynchronizeRequest { epoch, reason: page.reason, ..Default::default() },
                },
            };
            let mut acc = acc;
            acc.req.pods.extend(page.pods);
            acc.req.containers.extend(page.containers);
            if page.more {
                st.sync = Some(acc);
                return Ok(Response::new(SynchronizeResponse { more: true, ..Default::default() }));
            }
            acc.req.reason = page.reason;
            acc.req
        };
        debug!(plugin = %self.shared.full, epoch, reason = ?full.reason(), pods = full.pods.len(),
            containers = full.containers.len(), "synchronizing");
        match self.run("Synchronize", self.handler.synchronize(ctx, full)).await {
            Ok(mut rsp) => {
                rsp.more = false;
                Ok(Response::new(rsp))
            }
            Err(st) => {
                error!(plugin = %self.shared.full, epoch, code = ?st.code(), error = st.message(), "Synchronize failed");
                Err(st)
            }
        }
    }

    async fn shutdown(&self, request: Request<ShutdownRequest>) -> Result<Response<ShutdownResponse>, Status> {
        let ctx = self.context(request.metadata(), None);
        let req = request.into_inner();
        info!(plugin = %self.shared.full, kind = ?req.kind(), reason = %req.reason, "shutdown");
        self.shared.lock().shutdown = Some(req.clone());
        let h = self.handler.clone();
        let _ = self
            .run("Shutdown", async move {
                h.shutdown(ctx, req).await;
                Ok::<_, HandlerError>(())
            })
            .await;
        Ok(Response::new(ShutdownResponse {}))
    }

    async fn run_pod_sandbox(
        &self,
        r: Request<RunPodSandboxRequest>,
    ) -> Result<Response<RunPodSandboxResponse>, Status> {
        self.event(Event::RunPodSandbox, r, |c, q| self.handler.run_pod_sandbox(c, q)).await
    }

    async fn update_pod_sandbox(
        &self,
        r: Request<UpdatePodSandboxRequest>,
    ) -> Result<Response<UpdatePodSandboxResponse>, Status> {
        self.event(Event::UpdatePodSandbox, r, |c, q| self.handler.update_pod_sandbox(c, q)).await
    }

    async fn post_update_pod_sandbox(
        &self,
        r: Request<PostUpdatePodSandboxRequest>,
    ) -> Result<Response<PostUpdatePodSandboxResponse>, Status> {
        self.event(Event::PostUpdatePodSandbox, r, |c, q| self.handler.post_update_pod_sandbox(c, q)).await
    }

    async fn stop_pod_sandbox(
        &self,
        r: Request<StopPodSandboxRequest>,
    ) -> Result<Response<StopPodSandboxResponse>, Status> {
        self.event(Event::StopPodSandbox, r, |c, q| self.handler.stop_pod_sandbox(c, q)).await
    }

    async fn remove_pod_sandbox(
        &self,
        r: Request<RemovePodSandboxRequest>,
    ) -> Result<Response<RemovePodSandboxResponse>, Status> {
        self.event(Event::RemovePodSandbox, r, |c, q| self.handler.remove_pod_sandbox(c, q)).await
    }

    async fn create_container(
        &self,
        r: Request<CreateContainerRequest>,
    ) -> Result<Response<CreateContainerResponse>, Status> {
        self.event(Event::CreateContainer, r, |c, q| self.handler.create_container(c, q)).await
    }

    async fn post_create_container(
        &self,
        r: Request<PostCreateContainerRequest>,
    ) -> Result<Response<PostCreateContainerResponse>, Status> {
        self.event(Event::PostCreateContainer, r, |c, q| self.handler.post_create_container(c, q)).await
    }

    async fn start_container(
        &self,
        r: Request<StartContainerRequest>,
    ) -> Result<Response<StartContainerResponse>, Status> {
        self.event(Event::StartContainer, r, |c, q| self.handler.start_container(c, q)).await
    }

    async fn post_start_container(
        &self,
        r: Request<PostStartContainerRequest>,
    ) -> Result<Response<PostStartContainerResponse>, Status> {
        self.event(Event::PostStartContainer, r, |c, q| self.handler.post_start_container(c, q)).await
    }

    async fn update_container(
        &self,
        r: Request<UpdateContainerRequest>,
    ) -> Result<Response<UpdateContainerResponse>, Status> {
        self.event(Event::UpdateContainer, r, |c, q| self.handler.update_container(c, q)).await
    }

    async fn post_update_container(
        &self,
        r: Request<PostUpdateContainerRequest>,
    ) -> Result<Response<PostUpdateContainerResponse>, Status> {
        self.event(Event::PostUpdateContainer, r, |c, q| self.handler.post_update_container(c, q)).await
    }

    async fn stop_container(
        &self,
        r: Request<StopContainerRequest>,
    ) -> Result<Response<StopContainerResponse>, Status> {
        self.event(Event::StopContainer, r, |c, q| self.handler.stop_container(c, q)).await
    }

    async fn remove_container(
        &self,
        r: Request<RemoveContainerRequest>,
    ) -> Result<Response<RemoveContainerResponse>, Status> {
        self.event(Event::RemoveContainer, r, |c, q| self.handler.remove_container(c, q)).await
    }

    /// A validator's error is a rejection with the error's message.
    async fn validate_container_adjustment(
        &self,
        r: Request<ValidateContainerAdjustmentRequest>,
    ) -> Result<Response<ValidateContainerAdjustmentResponse>, Status> {
        let ctx = self.context(r.metadata(), None);
        let req = r.into_inner();
        let container = req.container.as_ref().map(|c| c.name.clone()).unwrap_or_default();
        match self.run("ValidateContainerAdjustment", self.handler.validate_container_adjustment(ctx, req)).await {
            Ok(rsp) => Ok(Response::new(rsp)),
            Err(st) => {
                debug!(plugin = %self.shared.full, container = %container, reason = st.message(),
                    "rejecting container adjustment");
                Ok(Response::new(ValidateContainerAdjustmentResponse { reject: true, reason: st.message().to_owned() }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout() {
        assert_eq!(parse_grpc_timeout("1999m"), Some(Duration::from_millis(1999)));
        assert_eq!(parse_grpc_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("5n"), Some(Duration::from_nanos(5)));
        assert_eq!(parse_grpc_timeout("m"), None);
        assert_eq!(parse_grpc_timeout("12x"), None);
    }

    #[test]
    fn uid_rule() {
        assert!(authorize_uid(-1, 0, "10-a").is_ok());
        assert!(authorize_uid(1000, 1000, "10-a").is_ok());
        let st = authorize_uid(1000, 65534, "10-a").unwrap_err();
        assert_eq!(st.code(), tonic::Code::PermissionDenied);
        assert!(st.message().contains("uid 65534 may not call plugin 10-a"), "{}", st.message());
        assert!(authorize_uid(-1, 1000, "10-a").is_err());
    }

    #[tokio::test]
    async fn a_call_past_its_deadline_answers_deadline_exceeded() {
        let mut h = http::HeaderMap::new();
        h.insert("grpc-timeout", http::HeaderValue::from_static("20m"));
        let d = call_deadline(&h).unwrap();
        assert!(
            d <= tokio::time::Instant::now() + Duration::from_millis(19),
            "the deadline is not earlier than the header's"
        );
        let never = std::future::pending::<Result<http::Response<Body>, Infallible>>();
        let rsp = tokio::time::timeout(Duration::from_secs(10), by_deadline(Some(d), "10-slow".into(), never))
            .await
            .expect("no answer at the call's deadline")
            .unwrap();
        let st = Status::from_header_map(rsp.headers()).expect("a status");
        assert_eq!(st.code(), tonic::Code::DeadlineExceeded, "{st:?}");
        assert!(st.message().contains("10-slow"), "{}", st.message());
        assert!(call_deadline(&http::HeaderMap::new()).is_none());
    }

    #[tokio::test]
    async fn panics_become_errors() {
        let r = catch_unwind(async { panic!("boom") }).await;
        assert_eq!(panic_message(&*r.unwrap_err()), "boom");
        assert_eq!(catch_unwind(async { 7 }).await.unwrap(), 7);
    }
}
