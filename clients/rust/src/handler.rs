//! The handler trait plugins implement.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::HandlerResult;
use crate::events::EventMask;
use crate::plugin::PluginHandle;
use crate::v1beta1::*;

/// What the SDK knows about one call from nrid.
#[derive(Clone, Debug)]
pub struct Context {
    pub(crate) instance_id: String,
    pub(crate) node_name: String,
    pub(crate) runtime_name: String,
    pub(crate) deadline: Option<Instant>,
    pub(crate) traceparent: Option<String>,
    pub(crate) plugin: PluginHandle,
}

impl Context {
    /// The instance id the call is addressed to (`nri-instance-id`); the
    /// SDK has checked that it is the current one.
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// The node nrid runs on (`nri-node-name`).
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// The container runtime behind nrid (`nri-runtime-name`).
    pub fn runtime_name(&self) -> &str {
        &self.runtime_name
    }

    /// The call's deadline (from `grpc-timeout`). nrid sets one on every
    /// call; it may be shorter than the timeout the plugin asked for.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The time left until the deadline, if there is one.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The W3C `traceparent` of the call, when nrid traces.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// The plugin, for example to send
    /// [`update_containers`](PluginHandle::update_containers) after
    /// replying (never synchronously from a handler for the same pod).
    pub fn plugin(&self) -> &PluginHandle {
        &self.plugin
    }
}

/// An NRI plugin's event handlers.
///
/// Implement [`events`](Handler::events) and the handlers of the events you
/// subscribe to; every handler has a default that answers an empty,
/// successful response (no change, no veto). Write the handlers as
/// `async fn`:
///
/// ```
/// use nri_grpc::v1beta1::{StartContainerRequest, StartContainerResponse};
/// use nri_grpc::{Context, Event, EventMask, Handler, HandlerError, HandlerResult};
///
/// struct NoRoot;
///
/// impl Handler for NoRoot {
///     fn events(&self) -> EventMask {
///         EventMask::of(&[Event::StartContainer])
///     }
///     async fn start_container(&self, _ctx: Context, req: StartContainerRequest)
///         -> HandlerResult<StartContainerResponse> {
///         let uid = req.container.and_then(|c| c.user).map(|u| u.uid);
///         if uid == Some(0) {
///             return Err(HandlerError::veto("containers may not run as root"));
///         }
///         Ok(StartContainerResponse::default())
///     }
/// }
/// ```
///
/// Errors: see [`HandlerError`](crate::HandlerError). On creating events
/// (RunPodSandbox, UpdatePodSandbox, CreateContainer, StartContainer,
/// UpdateContainer) an error vetoes the operation; on notification and
/// teardown events it is only recorded. A panicking handler answers
/// `INTERNAL` (a veto on a creating event).
///
/// Concurrency: nrid sends one call at a time unless the plugin declared
/// (and was granted) `max_concurrent_calls` > 1, and events of one pod are
/// always sequential. Handlers take `&self`: use interior mutability for
/// state.
pub trait Handler: Send + Sync + 'static {
    /// The events the plugin subscribes to. Must not be empty; nrid calls
    /// exactly these. [`configure`](Handler::configure) may narrow the set
    /// per registration.
    fn events(&self) -> EventMask;

    /// Configure: called once per registration, first. `req.config` is the
    /// plugin's drop-in configuration (pre-launched plugins), `req.capabilities`
    /// what nrid granted. The response may narrow the subscription (`events`;
    /// 0 keeps [`events`](Handler::events), bits outside it fail Configure)
    /// and override the failure policy (`failure_policy`; `None` keeps the
    /// builder's). An error fails the registration (it is retried with
    /// backoff).
    fn configure(
        &self,
        _ctx: Context,
        _req: ConfigureRequest,
    ) -> impl Future<Output = HandlerResult<ConfigureResponse>> + Send {
        async { Ok(ConfigureResponse::default()) }
    }

    /// Synchronize: the full state of the runtime, once per synchronization.
    /// The SDK collects the pages of a split synchronization and calls this
    /// once with every pod and container (`more` is false). `req.epoch` is 1
    /// at registration; a higher epoch (only with the resync capability, see
    /// [`PluginBuilder::resync`](crate::PluginBuilder::resync)) is a resync:
    /// replace your view of the state. The response may carry updates and
    /// evictions; its `more` is ignored.
    fn synchronize(
        &self,
        _ctx: Context,
        _req: SynchronizeRequest,
    ) -> impl Future<Output = HandlerResult<SynchronizeResponse>> + Send {
        async { Ok(SynchronizeResponse::default()) }
    }

    /// Shutdown: nrid tells why the registration ends (`req.kind`,
    /// `req.reason`). Answer quickly. After `ShutdownKind::Replaced`
    /// [`Plugin::run`](crate::Plugin::run) returns
    /// [`Exit::Replaced`](crate::Exit::Replaced); otherwise the plugin
    /// registers again, with backoff.
    fn shutdown(&self, _ctx: Context, _req: ShutdownRequest) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// RunPodSandbox (creating: an error vetoes the pod).
    fn run_pod_sandbox(
        &self,
        _ctx: Context,
        _req: RunPodSandboxRequest,
    ) -> impl Future<Output = HandlerResult<RunPodSandboxResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// UpdatePodSandbox (creating: an error vetoes the update).
    fn update_pod_sandbox(
        &self,
        _ctx: Context,
        _req: UpdatePodSandboxRequest,
    ) -> impl Future<Output = HandlerResult<UpdatePodSandboxResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// PostUpdatePodSandbox (notification).
    fn post_update_pod_sandbox(
        &self,
        _ctx: Context,
        _req: PostUpdatePodSandboxRequest,
    ) -> impl Future<Output = HandlerResult<PostUpdatePodSandboxResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// StopPodSandbox (teardown).
    fn stop_pod_sandbox(
        &self,
        _ctx: Context,
        _req: StopPodSandboxRequest,
    ) -> impl Future<Output = HandlerResult<StopPodSandboxResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// RemovePodSandbox (teardown).
    fn remove_pod_sandbox(
        &self,
        _ctx: Context,
        _req: RemovePodSandboxRequest,
    ) -> impl Future<Output = HandlerResult<RemovePodSandboxResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// CreateContainer (creating: an error vetoes the creation). The
    /// response may adjust the container (see [`Adjustment`](crate::Adjustment)),
    /// update other containers (see [`Update`](crate::Update)) and evict
    /// containers. `req.container` already has the changes of plugins with a
    /// lower index.
    fn create_container(
        &self,
        _ctx: Context,
        _req: CreateContainerRequest,
    ) -> impl Future<Output = HandlerResult<CreateContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// PostCreateContainer (notification).
    fn post_create_container(
        &self,
        _ctx: Context,
        _req: PostCreateContainerRequest,
    ) -> impl Future<Output = HandlerResult<PostCreateContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// StartContainer (creating: an error vetoes the start).
    fn start_container(
        &self,
        _ctx: Context,
        _req: StartContainerRequest,
    ) -> impl Future<Output = HandlerResult<StartContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// PostStartContainer (notification).
    fn post_start_container(
        &self,
        _ctx: Context,
        _req: PostStartContainerRequest,
    ) -> impl Future<Output = HandlerResult<PostStartContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// UpdateContainer (creating: an error vetoes the update). An update of
    /// the target container in the response alters the pending update.
    fn update_container(
        &self,
        _ctx: Context,
        _req: UpdateContainerRequest,
    ) -> impl Future<Output = HandlerResult<UpdateContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// PostUpdateContainer (notification).
    fn post_update_container(
        &self,
        _ctx: Context,
        _req: PostUpdateContainerRequest,
    ) -> impl Future<Output = HandlerResult<PostUpdateContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// StopContainer (teardown). The response may update other containers,
    /// for example to hand back freed resources.
    fn stop_container(
        &self,
        _ctx: Context,
        _req: StopContainerRequest,
    ) -> impl Future<Output = HandlerResult<StopContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// RemoveContainer (teardown).
    fn remove_container(
        &self,
        _ctx: Context,
        _req: RemoveContainerRequest,
    ) -> impl Future<Output = HandlerResult<RemoveContainerResponse>> + Send {
        async { Ok(Default::default()) }
    }

    /// ValidateContainerAdjustment: subscribing to
    /// `Event::ValidateContainerAdjustment` makes the plugin a validator,
    /// called concurrently with other validators with the merged result of
    /// every container creation. Return `reject: true` with a reason, or
    /// simply an error (its message becomes the reason), to reject. Validators
    /// fail closed: a validator that times out also fails the creation.
    fn validate_container_adjustment(
        &self,
        _ctx: Context,
        _req: ValidateContainerAdjustmentRequest,
    ) -> impl Future<Output = HandlerResult<ValidateContainerAdjustmentResponse>> + Send {
        async { Ok(Default::default()) }
    }
}
