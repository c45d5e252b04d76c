//! The plugin runtime: endpoint, registration session, re-registration.

use std::future::Future;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{oneshot, watch};
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Status};
use tracing::{debug, error, info, warn};

use crate::events::EventMask;
use crate::handler::Handler;
use crate::selector::{check_reason, check_selectors, normalize};
use crate::service::{Router, Service};
use crate::v1beta1::register_plugin_response::Message as RegisterMessage;
use crate::v1beta1::runtime_service_client::RuntimeServiceClient;
use crate::v1beta1::{
    Capabilities, ContainerEviction, ContainerUpdate, Event, EventSelector, EventTimeout, FailurePolicy, PluginStatus,
    RegisterPluginRequest, Registered, RegistrationRefusal, RequestResyncRequest, SetPluginStatusRequest, ShutdownKind,
    ShutdownRequest, SynchronizeRequest, Timeouts, UpdateContainersRequest, UpdateContainersResponse,
};

/// nrid's default socket, as a gRPC target.
pub const DEFAULT_SERVER_ADDRESS: &str = "unix:///var/run/nri/nri-grpc.sock";
/// nrid's default plugin socket directory; the default endpoint is
/// `NN-name.sock` in it.
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/nri/plugins";
/// Set by nrid for the plugins it launches: the name to register with.
/// When set, it wins over [`PluginBuilder::name`].
pub const ENV_PLUGIN_NAME: &str = "NRI_GRPC_PLUGIN_NAME";
/// Set by nrid for the plugins it launches: the two-digit index.
pub const ENV_PLUGIN_IDX: &str = "NRI_GRPC_PLUGIN_IDX";
/// Set by nrid for the plugins it launches: nrid's socket (a gRPC target or
/// a bare absolute path).
pub const ENV_SERVER_ADDRESS: &str = "NRI_GRPC_SERVER_ADDRESS";
/// Set by nrid for the plugins it launches: the absolute path of the socket
/// to listen on.
pub const ENV_PLUGIN_ENDPOINT: &str = "NRI_GRPC_PLUGIN_ENDPOINT";
/// The call metadata key that carries the instance id a call is addressed
/// to.
pub const METADATA_INSTANCE_ID: &str = "nri-instance-id";

/// The longest unix socket path (`sun_path` is 108 bytes with the NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The HTTP/2 stream window of every connection the SDK makes or accepts
/// (the same as nrid's: fixed, no bandwidth probing).
const STREAM_WINDOW: u32 = 4 << 20;
/// The HTTP/2 connection window of every connection the SDK makes or accepts.
const CONN_WINDOW: u32 = 8 << 20;
/// nrid's default and largest message size.
pub(crate) const DEFAULT_MAX_MESSAGE_SIZE: u32 = 4 << 20;

/// Errors of the SDK.
#[derive(Debug)]
pub enum Error {
    /// The plugin's configuration is invalid (name, index, addresses, ...).
    Config(String),
    /// A local I/O operation failed (listening on the endpoint, ...).
    Io(String, std::io::Error),
    /// nrid refused the registration for a reason that retrying cannot fix
    /// (invalid name, index, endpoint, events or capabilities, not
    /// permitted, peer mismatch). [`crate::rpc::reason`] gives the
    /// `RegistrationRefusal` name.
    Refused(Status),
    /// The plugin is not registered (for
    /// [`PluginHandle::update_containers`], [`PluginHandle::set_status`],
    /// which keeps the status for the next registration all the same, and
    /// [`PluginHandle::request_resync`]).
    NotRegistered,
    /// An argument is invalid (a status reason too long, ...); nothing was
    /// sent.
    InvalidArgument(String),
    /// A call to nrid failed.
    Rpc(Status),
    /// Serving the endpoint failed.
    Serve(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Config(m) => write!(f, "invalid plugin configuration: {m}"),
            Error::Io(what, e) => write!(f, "{what}: {e}"),
            Error::Refused(st) => {
                write!(f, "registration refused ({}, {:?}): {}", crate::rpc::reason(st), st.code(), st.message())
            }
            Error::NotRegistered => write!(f, "the plugin is not registered"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Rpc(st) => write!(f, "call to nrid failed ({:?}): {}", st.code(), st.message()),
            Error::Serve(m) => write!(f, "serving the endpoint failed: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(_, e) => Some(e),
            Error::Refused(st) | Error::Rpc(st) => Some(st),
            _ => None,
        }
    }
}

/// How [`Plugin::run`] ended without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The stop future completed, or [`PluginHandle::stop`] was called.
    Stopped,
    /// nrid replaced the plugin by a newer instance of it
    /// (`SHUTDOWN_KIND_REPLACED`); the plugin did not register again. A
    /// process usually exits with status 0 then.
    Replaced,
}

/// Checks a plugin name: non-empty, characters from `[a-zA-Z0-9_.+-]`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("plugin name is empty".into());
    }
    match name.chars().find(|c| !(c.is_ascii_alphanumeric() || "_.+-".contains(*c))) {
        Some(c) => Err(format!("plugin name {name:?} contains {c:?}; allowed are [a-zA-Z0-9_.+-]")),
        None => Ok(()),
    }
}

/// Checks a plugin index: exactly two ASCII digits.
pub fn check_index(idx: &str) -> Result<(), String> {
    if idx.len() == 2 && idx.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(format!("plugin index {idx:?} must be exactly two ASCII digits"))
    }
}

/// Splits a `NN-name` plugin file name into its index and name.
pub fn parse_plugin_file_name(s: &str) -> Option<(&str, &str)> {
    let (idx, name) = (s.get(..2)?, s.get(3..)?);
    (s.as_bytes()[2] == b'-' && check_index(idx).is_ok() && check_name(name).is_ok()).then_some((idx, name))
}

/// The socket path of a `unix:///abs`, `unix:abs` or `/abs` target.
fn socket_path(target: &str) -> Result<PathBuf, String> {
    let p = target.strip_prefix("unix://").or_else(|| target.strip_prefix("unix:")).unwrap_or(target);
    let p = Path::new(p);
    if !p.is_absolute() {
        return Err(format!(
            "{target:?} is not a unix socket (unix:///abs/path or an absolute path); the Rust SDK speaks unix sockets only"
        ));
    }
    Ok(p.components().collect())
}

/// State shared by the runtime, the service and handles.
pub(crate) struct Shared {
    pub(crate) full: String,
    pub(crate) events: EventMask,
    pub(crate) failure_policy: Option<FailurePolicy>,
    pub(crate) debug_access: bool,
    /// uid of the process behind nrid's socket, -1 while unknown.
    pub(crate) server_uid: Arc<AtomicI64>,
    pub(crate) state: Mutex<State>,
    pub(crate) registered: watch::Sender<Option<Registered>>,
    stop: watch::Sender<bool>,
    update_timeout: Duration,
    /// The status registrations carry: the builder's, then the last one
    /// [`PluginHandle::set_status`] was given.
    report: Mutex<Report>,
    /// Held while a SetPluginStatus call is under way: reports reach nrid in
    /// the order they were made.
    status_calls: tokio::sync::Mutex<()>,
    /// A RegisterPlugin call is under way and not answered yet.
    registering: AtomicBool,
}

/// The status a plugin reports.
struct Report {
    status: PluginStatus,
    reason: String,
    /// Counts changes, so that a change made while a registration was
    /// pending is sent after it (its request carried an older status).
    generation: u64,
}

/// The registration state.
#[derive(Default)]
pub(crate) struct State {
    /// A RegisterPlugin call is waiting for its first message: Configure is
    /// accepted.
    pub(crate) pending: bool,
    /// The current instance id (from the latest Configure).
    pub(crate) instance: Option<String>,
    /// Pages of a split synchronization.
    pub(crate) sync: Option<SyncPages>,
    /// The last Shutdown of the current session.
    pub(crate) shutdown: Option<ShutdownRequest>,
    /// The connection of the current session.
    channel: Option<Channel>,
}

/// The pages of one synchronization collected so far.
pub(crate) struct SyncPages {
    pub(crate) instance: String,
    pub(crate) epoch: u64,
    pub(crate) req: SynchronizeRequest,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn report(&self) -> MutexGuard<'_, Report> {
        self.report.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The channel and instance id of the current registration.
    fn session(&self) -> Result<(Channel, String), Error> {
        if self.registered.borrow().is_none() {
            return Err(Error::NotRegistered);
        }
        let st = self.lock();
        match (&st.channel, &st.instance) {
            (Some(c), Some(i)) => Ok((c.clone(), i.clone())),
            _ => Err(Error::NotRegistered),
        }
    }

    /// A request to nrid with the instance id and the deadline of
    /// unsolicited calls.
    fn request<T>(&self, msg: T, instance: &str) -> Result<tonic::Request<T>, Error> {
        let mut req = tonic::Request::new(msg);
        req.metadata_mut().insert(
            METADATA_INSTANCE_ID,
            instance.parse().map_err(|_| Error::Rpc(Status::internal("instance id is not ASCII")))?,
        );
        req.set_timeout(self.update_timeout);
        Ok(req)
    }

    /// SetPluginStatus with the status reported last, one call at a time:
    /// whatever order concurrent reports take, the last call nrid gets
    /// carries the last status.
    async fn send_status(&self, channel: Channel, instance: &str) -> Result<(), Error> {
        let _order = self.status_calls.lock().await;
        let (status, reason) = {
            let r = self.report();
            (r.status, r.reason.clone())
        };
        let req = self.request(SetPluginStatusRequest { status: status as i32, reason: reason.clone() }, instance)?;
        let mut client = RuntimeServiceClient::new(channel);
        match tokio::time::timeout(self.update_timeout, client.set_plugin_status(req)).await {
            Ok(Ok(_)) => {
                info!(plugin = %self.full, status = ?status, reason = %reason, "status reported");
                Ok(())
            }
            Ok(Err(st)) => Err(Error::Rpc(st)),
            Err(_) => Err(Error::Rpc(Status::deadline_exceeded("SetPluginStatus timed out"))),
        }
    }

    /// Forgets the current registration.
    fn end_session(&self) {
        self.registering.store(false, Ordering::SeqCst);
        {
            let mut st = self.lock();
            st.pending = false;
            st.instance = None;
            st.sync = None;
            st.channel = None;
        }
        self.registered.send_if_modified(|r| r.take().is_some());
    }
}

/// A cheap, cloneable handle on a running plugin: its registration, stop,
/// and unsolicited updates.
#[derive(Clone)]
pub struct PluginHandle {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for PluginHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHandle").field("plugin", &self.shared.full).finish()
    }
}

impl PluginHandle {
    /// The plugin's full name, `NN-name`.
    pub fn name(&self) -> &str {
        &self.shared.full
    }

    /// nrid's answer to the current registration, or `None` while the
    /// plugin is not registered.
    pub fn registered(&self) -> Option<Registered> {
        self.shared.registered.borrow().clone()
    }

    /// Waits until the plugin is registered, and returns the registration.
    pub async fn wait_registered(&self) -> Registered {
        let mut rx = self.shared.registered.subscribe();
        let reg = rx.wait_for(Option::is_some).await.expect("the sender lives in the handle");
        reg.clone().expect("checked by wait_for")
    }

    /// Waits until the plugin is registered with another instance than
    /// `instance_id` (a re-registration), and returns the registration.
    pub async fn wait_registered_other_than(&self, instance_id: &str) -> Registered {
        let mut rx = self.shared.registered.subscribe();
        let reg = rx
            .wait_for(|r| r.as_ref().is_some_and(|r| r.instance_id != instance_id))
            .await
            .expect("the sender lives in the handle");
        reg.clone().expect("checked by wait_for")
    }

    /// A receiver of every registration change (`None` while not
    /// registered).
    pub fn watch_registration(&self) -> watch::Receiver<Option<Registered>> {
        self.shared.registered.subscribe()
    }

    /// Stops [`Plugin::run`]: the registration ends, the endpoint closes and
    /// `run` returns [`Exit::Stopped`].
    pub fn stop(&self) {
        self.shared.stop.send_replace(true);
    }

    /// Asks nrid for unsolicited updates and evictions of existing
    /// containers (`RuntimeService.UpdateContainers` with the current
    /// instance id), and returns what could not be applied (`failed`,
    /// `failed_evictions`). Never call it synchronously from a handler for a
    /// container of the pod whose event is being handled: the update waits
    /// for that event, which waits for the handler. Return the update in the
    /// handler's response instead, or send it after replying (for example
    /// from a spawned task). The call has a 10 s deadline unless
    /// [`PluginBuilder::update_timeout`] says otherwise.
    pub async fn update_containers(
        &self,
        update: Vec<ContainerUpdate>,
        evict: Vec<ContainerEviction>,
    ) -> Result<UpdateContainersResponse, Error> {
        let (channel, instance) = self.shared.session()?;
        let timeout = self.shared.update_timeout;
        let req = self.shared.request(UpdateContainersRequest { update, evict }, &instance)?;
        let mut client = RuntimeServiceClient::new(channel);
        match tokio::time::timeout(timeout, client.update_containers(req)).await {
            Ok(Ok(rsp)) => Ok(rsp.into_inner()),
            Ok(Err(st)) => Err(Error::Rpc(st)),
            Err(_) => Err(Error::Rpc(Status::deadline_exceeded("UpdateContainers timed out"))),
        }
    }

    /// The status and reason the plugin reports: the last
    /// [`set_status`](PluginHandle::set_status), else the builder's. Every
    /// registration carries it.
    pub fn status(&self) -> (PluginStatus, String) {
        let r = self.shared.report();
        (r.status, r.reason.clone())
    }

    /// Reports the plugin's status to nrid (`RuntimeService.SetPluginStatus`
    /// with the current instance id): `Ready`, `NotReady` or `Degraded`
    /// (`Unspecified` is `Ready`), with a reason for operators (at most 1024
    /// bytes).
    ///
    /// The status holds until the next report, across registrations: when
    /// the plugin registers again (nrid restarted) it registers with the
    /// last status, so a NOT_READY plugin stays NOT_READY. What NOT_READY
    /// means for the plugin's events is nrid's policy (wait, fail or skip).
    ///
    /// While a registration is under way (in [`Handler::configure`] and the
    /// first [`Handler::synchronize`], which come before nrid's Registered)
    /// it never fails: once Configure named the instance the status is sent
    /// at once (nrid takes it from Configure on), and in any case again as
    /// soon as the plugin is registered.
    ///
    /// Errors: [`Error::InvalidArgument`] for a reason too long (nothing
    /// changes); [`Error::NotRegistered`] while the plugin is not registered
    /// nor registering (the status is kept and sent with the next
    /// registration);
    /// [`Error::Rpc`] when nrid refuses the call (the status is kept all the
    /// same). The call has the deadline of
    /// [`PluginBuilder::update_timeout`].
    pub async fn set_status(&self, status: PluginStatus, reason: impl Into<String>) -> Result<(), Error> {
        let reason = reason.into();
        check_reason("reason", &reason).map_err(Error::InvalidArgument)?;
        // The change and the look at the session are one step under the
        // report's lock, which the session also holds while it publishes a
        // registration: either the registration's catch-up or this call
        // sends the change, never neither.
        // (registered, the session to send on)
        let (registered, session) = {
            let mut r = self.shared.report();
            r.status = normalize(status);
            r.reason = reason;
            r.generation += 1;
            match self.shared.session() {
                Ok(s) => (true, Some(s)),
                Err(Error::NotRegistered) if self.shared.registering.load(Ordering::SeqCst) => {
                    let st = self.shared.lock();
                    match (st.pending, &st.channel, &st.instance) {
                        (true, Some(c), Some(i)) => (false, Some((c.clone(), i.clone()))),
                        _ => (false, None),
                    }
                }
                Err(e) => return Err(e),
            }
        };
        let Some((channel, instance)) = session else { return Ok(()) };
        let res = self.shared.send_status(channel, &instance).await;
        if registered {
            return res;
        }
        // Registering: sent once registered in any case; at once too when
        // Configure named the instance (nrid takes it from Configure on).
        if let Err(e) = res {
            debug!(plugin = %self.shared.full, error = %e, "status not sent yet");
        }
        Ok(())
    }

    /// Asks nrid for the runtime's state again ("my view changed";
    /// `RuntimeService.RequestResync` with the current instance id) and
    /// returns the epoch of the Synchronize that will carry it: the state
    /// arrives at [`Handler::synchronize`](crate::Handler::synchronize) with
    /// that epoch and reason `SyncReason::PluginRequested`. Requests made
    /// while one is pending are merged into it (the same epoch comes back).
    ///
    /// nrid answers at once; the Synchronize follows, ordered with the
    /// plugin's events like any resynchronization. Errors:
    /// [`Error::InvalidArgument`] for a reason over 1024 bytes,
    /// [`Error::NotRegistered`], [`Error::Rpc`] when nrid refuses.
    pub async fn request_resync(&self, reason: impl Into<String>) -> Result<u64, Error> {
        let reason = reason.into();
        check_reason("reason", &reason).map_err(Error::InvalidArgument)?;
        let (channel, instance) = self.shared.session()?;
        let req = self.shared.request(RequestResyncRequest { reason: reason.clone() }, &instance)?;
        let mut client = RuntimeServiceClient::new(channel);
        match tokio::time::timeout(self.shared.update_timeout, client.request_resync(req)).await {
            Ok(Ok(rsp)) => {
                let epoch = rsp.into_inner().epoch;
                debug!(plugin = %self.shared.full, reason = %reason, epoch, "resync requested");
                Ok(epoch)
            }
            Ok(Err(st)) => Err(Error::Rpc(st)),
            Err(_) => Err(Error::Rpc(Status::deadline_exceeded("RequestResync timed out"))),
        }
    }
}

/// Configures a [`Plugin`]; see [`Plugin::builder`].
pub struct PluginBuilder<H> {
    handler: H,
    name: Option<String>,
    index: Option<String>,
    server_address: Option<String>,
    endpoint: Option<String>,
    socket_dir: String,
    use_env: bool,
    caps: Capabilities,
    timeouts: Timeouts,
    has_timeouts: bool,
    failure_policy: Option<FailurePolicy>,
    debug_access: bool,
    plugin_version: String,
    backoff: (Duration, Duration),
    update_timeout: Duration,
    selectors: Vec<EventSelector>,
    status: (PluginStatus, String),
    errors: Vec<String>,
}

fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration { seconds: d.as_secs() as i64, nanos: d.subsec_nanos() as i32 }
}

impl<H: Handler> PluginBuilder<H> {
    /// Sets the plugin name (characters from `[a-zA-Z0-9_.+-]`).
    /// `NRI_GRPC_PLUGIN_NAME` wins over it. Without a name or an index, both
    /// are parsed from the binary's name when it is `NN-name`, as in
    /// classic NRI.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the two-digit index (`"00"` to `"99"`) that orders the plugin
    /// among plugins. `NRI_GRPC_PLUGIN_IDX` wins over it.
    pub fn index(mut self, idx: impl Into<String>) -> Self {
        self.index = Some(idx.into());
        self
    }

    /// Sets nrid's address: `unix:///path` or an absolute socket path
    /// (default [`DEFAULT_SERVER_ADDRESS`]). `NRI_GRPC_SERVER_ADDRESS` wins
    /// over it.
    pub fn server_address(mut self, addr: impl Into<String>) -> Self {
        self.server_address = Some(addr.into());
        self
    }

    /// Sets the unix socket the plugin serves on (an absolute path or
    /// `unix:///path`); the default is `NN-name.sock` in the socket
    /// directory. `NRI_GRPC_PLUGIN_ENDPOINT` wins over it. Two processes
    /// cannot share an endpoint: a second instance of a running plugin needs
    /// another one.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// Sets the directory of the default endpoint (default
    /// [`DEFAULT_SOCKET_DIR`]); it must be nrid's plugin socket directory.
    pub fn socket_dir(mut self, dir: impl Into<String>) -> Self {
        self.socket_dir = dir.into();
        self
    }

    /// Whether the `NRI_GRPC_*` variables of pre-launched plugins apply
    /// (default true).
    pub fn use_env(mut self, yes: bool) -> Self {
        self.use_env = yes;
        self
    }

    /// Declares how many calls the plugin accepts at the same time (default
    /// 1). Events of one pod are still delivered one at a time.
    pub fn max_concurrent_calls(mut self, n: u32) -> Self {
        self.caps.max_concurrent_calls = n;
        self
    }

    /// Declares the largest message the plugin accepts from nrid (default
    /// and maximum 4 MiB; at least 64 KiB). Synchronize pages are sized to
    /// it.
    pub fn max_message_size(mut self, n: u32) -> Self {
        if n < 64 << 10 {
            self.errors.push(format!("max_message_size {n} is below 65536 bytes"));
        }
        self.caps.max_message_size = n;
        self
    }

    /// Declares that the handlers honour `dry_run` requests without side
    /// effects.
    pub fn dry_run(mut self, yes: bool) -> Self {
        self.caps.dry_run = yes;
        self
    }

    /// Declares the resync capability: after the runtime's state was read
    /// again, [`Handler::synchronize`] is called with the next epoch and the
    /// full state. Without it, a resync arrives as synthesized
    /// StopContainer/RemoveContainer/StopPodSandbox/RemovePodSandbox events
    /// for what vanished.
    pub fn resync(mut self, yes: bool) -> Self {
        self.caps.resync = yes;
        self
    }

    /// Asks for a default per-call timeout (nrid caps it by policy).
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.timeouts.request = Some(duration(d));
        self.has_timeouts = true;
        self
    }

    /// Asks for the timeout of one event.
    pub fn event_timeout(mut self, e: Event, d: Duration) -> Self {
        if EventMask::bit(e) == 0 || d.is_zero() {
            self.errors.push(format!("invalid timeout {d:?} for event {e:?}"));
        }
        self.timeouts.events.retain(|t| t.event != e as i32);
        self.timeouts.events.push(EventTimeout { event: e as i32, timeout: Some(duration(d)) });
        self.has_timeouts = true;
        self
    }

    /// Asks for the budget of a whole synchronization (all pages).
    pub fn synchronize_timeout(mut self, d: Duration) -> Self {
        self.timeouts.synchronize = Some(duration(d));
        self.has_timeouts = true;
        self
    }

    /// Asks for a failure policy: what nrid does when the plugin cannot
    /// answer (timeout, lost connection). `fail_request` makes the plugin
    /// required: creating events fail while it is unavailable;
    /// `keep_connected` keeps it registered after a timeout. The operator's
    /// policy may override both. Verdicts are not affected.
    pub fn failure_policy(mut self, fail_request: bool, keep_connected: bool) -> Self {
        self.failure_policy = Some(FailurePolicy { fail_request, keep_connected });
        self
    }

    /// Lets any local caller that can connect to the endpoint call the
    /// plugin (for example grpcurl run by a developer). By default only
    /// nrid's uid and root may. Calls must still name the current instance.
    pub fn debug_access(mut self, yes: bool) -> Self {
        self.debug_access = yes;
        self
    }

    /// Sets the plugin's own version, shown by AdminService.
    pub fn plugin_version(mut self, v: impl Into<String>) -> Self {
        self.plugin_version = v.into();
        self
    }

    /// Sets the bounds of the re-registration backoff: the delay starts at
    /// `first` and doubles up to `limit`, each delay drawn at random from
    /// its upper half (default 100 ms to 10 s). It applies while nrid serves
    /// and refuses; while nrid is away, the plugin registers as soon as its
    /// socket accepts connections.
    pub fn backoff(mut self, first: Duration, limit: Duration) -> Self {
        if first.is_zero() || limit < first {
            self.errors.push(format!("invalid backoff bounds {first:?}, {limit:?}"));
        }
        self.backoff = (first, limit);
        self
    }

    /// Sets the deadline of [`PluginHandle::update_containers`],
    /// [`PluginHandle::set_status`] and [`PluginHandle::request_resync`]
    /// (default 10 s).
    pub fn update_timeout(mut self, d: Duration) -> Self {
        self.update_timeout = d;
        self
    }

    /// Adds an event selector: the plugin receives only the events, and the
    /// Synchronize state, of the pods and containers one of its selectors
    /// matches (no selector: everything). Sent with every registration;
    /// [`PluginHandle::registered`]`.selectors` is what nrid put in effect.
    /// At most 16; see [`EventSelector::new`] for building one.
    pub fn selector(mut self, selector: EventSelector) -> Self {
        self.selectors.push(selector);
        self
    }

    /// Adds event selectors (see [`selector`](PluginBuilder::selector)).
    pub fn selectors(mut self, selectors: impl IntoIterator<Item = EventSelector>) -> Self {
        self.selectors.extend(selectors);
        self
    }

    /// Sets the status to register with (default `Ready`; `NotReady` for a
    /// plugin that must warm up first, then
    /// [`PluginHandle::set_status`]). After `set_status` every later
    /// registration carries the last status reported.
    pub fn status(mut self, status: PluginStatus, reason: impl Into<String>) -> Self {
        self.status = (normalize(status), reason.into());
        self
    }

    /// Checks the configuration and creates the plugin.
    pub fn build(self) -> Result<Plugin<H>, Error> {
        if let Some(e) = self.errors.first() {
            return Err(Error::Config(e.clone()));
        }
        check_selectors(&self.selectors).map_err(Error::Config)?;
        check_reason("status reason", &self.status.1).map_err(Error::Config)?;
        let env = |k: &str| if self.use_env { std::env::var(k).ok().filter(|v| !v.is_empty()) } else { None };
        let mut name = env(ENV_PLUGIN_NAME).or(self.name.clone());
        let mut index = env(ENV_PLUGIN_IDX).or(self.index.clone());
        if name.is_none() || index.is_none() {
            let arg0 = std::env::args_os().next().map(PathBuf::from);
            let base = arg0.as_deref().and_then(Path::file_name).and_then(|s| s.to_str()).unwrap_or("");
            if let Some((i, n)) = parse_plugin_file_name(base) {
                index.get_or_insert_with(|| i.to_owned());
                name.get_or_insert_with(|| n.to_owned());
            }
        }
        let name = name.unwrap_or_default();
        let index = index.unwrap_or_default();
        check_name(&name)
            .map_err(|e| Error::Config(format!("{e} (set it with PluginBuilder::name or {ENV_PLUGIN_NAME})")))?;
        check_index(&index)
            .map_err(|e| Error::Config(format!("{e} (set it with PluginBuilder::index or {ENV_PLUGIN_IDX})")))?;
        let full = format!("{index}-{name}");

        let events = self.handler.events();
        if events.is_empty() {
            return Err(Error::Config("Handler::events is empty; subscribe to at least one event".into()));
        }
        let server = env(ENV_SERVER_ADDRESS)
            .or(self.server_address.clone())
            .unwrap_or_else(|| DEFAULT_SERVER_ADDRESS.to_owned());
        let server = socket_path(&server).map_err(|e| Error::Config(format!("server address: {e}")))?;
        let endpoint = match env(ENV_PLUGIN_ENDPOINT).or(self.endpoint.clone()) {
            Some(ep) => socket_path(&ep).map_err(|e| Error::Config(format!("endpoint: {e}")))?,
            None => Path::new(&self.socket_dir).join(format!("{full}.sock")),
        };
        if endpoint.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(Error::Config(format!(
                "endpoint {} is longer than the {MAX_SOCKET_PATH} bytes of a unix socket path",
                endpoint.display()
            )));
        }
        let (registered, _) = watch::channel(None);
        let (stop, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            full: full.clone(),
            events,
            failure_policy: self.failure_policy,
            debug_access: self.debug_access,
            server_uid: Arc::new(AtomicI64::new(-1)),
            state: Mutex::new(State::default()),
            registered,
            stop,
            update_timeout: self.update_timeout,
            report: Mutex::new(Report { status: self.status.0, reason: self.status.1, generation: 0 }),
            status_calls: tokio::sync::Mutex::new(()),
            registering: AtomicBool::new(false),
        });
        Ok(Plugin {
            handler: Arc::new(self.handler),
            shared,
            name,
            index,
            server,
            endpoint,
            caps: self.caps,
            timeouts: self.has_timeouts.then_some(self.timeouts),
            plugin_version: self.plugin_version,
            backoff: self.backoff,
            selectors: self.selectors,
        })
    }
}

/// An NRI plugin: it serves `PluginService` on its endpoint, registers with
/// nrid and stays registered until stopped. Create it with
/// [`Plugin::builder`], then [`run`](Plugin::run) it.
pub struct Plugin<H> {
    handler: Arc<H>,
    shared: Arc<Shared>,
    name: String,
    index: String,
    server: PathBuf,
    endpoint: PathBuf,
    caps: Capabilities,
    timeouts: Option<Timeouts>,
    plugin_version: String,
    backoff: (Duration, Duration),
    selectors: Vec<EventSelector>,
}

/// How one registration attempt ended.
struct SessionResult {
    registered: bool,
    shutdown: Option<ShutdownRequest>,
    /// `None` when nrid ended the stream cleanly.
    err: Option<Status>,
}

impl<H: Handler> Plugin<H> {
    /// A builder of a plugin with `handler`.
    pub fn builder(handler: H) -> PluginBuilder<H> {
        PluginBuilder {
            handler,
            name: None,
            index: None,
            server_address: None,
            endpoint: None,
            socket_dir: DEFAULT_SOCKET_DIR.to_owned(),
            use_env: true,
            caps: Capabilities::default(),
            timeouts: Timeouts::default(),
            has_timeouts: false,
            failure_policy: None,
            debug_access: false,
            plugin_version: String::new(),
            backoff: (Duration::from_millis(100), Duration::from_secs(10)),
            update_timeout: Duration::from_secs(10),
            selectors: vec![],
            status: (PluginStatus::Ready, String::new()),
            errors: vec![],
        }
    }

    /// A handle on the plugin.
    pub fn handle(&self) -> PluginHandle {
        PluginHandle { shared: self.shared.clone() }
    }

    /// The full name, `NN-name`.
    pub fn name(&self) -> &str {
        &self.shared.full
    }

    /// The socket the plugin serves on.
    pub fn endpoint(&self) -> &Path {
        &self.endpoint
    }

    /// The event subscription.
    pub fn events(&self) -> EventMask {
        self.shared.events
    }

    /// The capabilities the plugin declares.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// The event selectors the plugin registers with (empty: everything).
    pub fn selectors(&self) -> &[EventSelector] {
        &self.selectors
    }

    /// Runs the plugin until [`PluginHandle::stop`] is called; see
    /// [`run_until`](Plugin::run_until).
    pub async fn run(self) -> Result<Exit, Error> {
        self.run_until(std::future::pending()).await
    }

    /// Runs the plugin until SIGTERM or SIGINT (or [`PluginHandle::stop`]);
    /// see [`run_until`](Plugin::run_until). nrid stops pre-launched plugins
    /// with SIGTERM and expects them to exit promptly.
    pub async fn run_until_signal(self) -> Result<Exit, Error> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term =
            signal(SignalKind::terminate()).map_err(|e| Error::Io("installing a SIGTERM handler".into(), e))?;
        let mut int =
            signal(SignalKind::interrupt()).map_err(|e| Error::Io("installing a SIGINT handler".into(), e))?;
        self.run_until(async move {
            tokio::select! {
                _ = term.recv() => info!("SIGTERM: stopping"),
                _ = int.recv() => info!("SIGINT: stopping"),
            }
        })
        .await
    }

    /// Serves the endpoint, registers, and keeps the plugin registered until
    /// `stop` completes (or [`PluginHandle::stop`] is called): when a
    /// registration ends (nrid stopped or restarted, the session broke, the
    /// plugin was evicted) it registers again: while nrid is away, as soon as
    /// its socket accepts connections again; while nrid serves, with
    /// exponential backoff and jitter. Returns [`Exit::Replaced`] when a newer instance took over,
    /// [`Exit::Stopped`] when stopped, and [`Error::Refused`] when nrid
    /// refused the registration for a reason retrying cannot fix.
    ///
    /// The endpoint (mode 0600; a stale socket file is removed first) is
    /// kept across registrations and removed when `run_until` returns.
    pub async fn run_until<F: Future<Output = ()>>(self, stop: F) -> Result<Exit, Error> {
        let max = self.caps.max_message_size.min(DEFAULT_MAX_MESSAGE_SIZE);
        let max = if max == 0 { DEFAULT_MAX_MESSAGE_SIZE } else { max } as usize + (64 << 10);
        let health = tonic_health::server::HealthReporter::new();
        let health_service = tonic_health::pb::health_server::HealthServer::new(
            tonic_health::server::HealthService::from_health_reporter(health.clone()),
        );
        health.set_service_status("", tonic_health::ServingStatus::NotServing).await;
        health.set_not_serving::<PluginServiceName>().await;
        let router = Router::new(
            Service { handler: self.handler.clone(), shared: self.shared.clone() },
            health_service,
            self.shared.clone(),
            max,
        )
        .map_err(Error::Serve)?;
        let listener = listen(&self.endpoint)?;
        let (serve_stop, serve_stop_rx) = oneshot::channel::<()>();
        let (serve_done_tx, mut serve_done) = oneshot::channel::<Result<(), String>>();
        let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
        let server = tokio::spawn(async move {
            // Fixed 4 MiB stream / 8 MiB connection windows, as nrid's own
            // connections (docs/PROTOCOL.md §16 item 13): hyper's adaptive
            // windows stay off, and a Synchronize page fits one window.
            let r = Server::builder()
                .initial_stream_window_size(STREAM_WINDOW)
                .initial_connection_window_size(CONN_WINDOW)
                .serve_with_incoming_shutdown(router, incoming, async {
                    let _ = serve_stop_rx.await;
                })
                .await
                .map_err(|e| e.to_string());
            let _ = serve_done_tx.send(r);
        });
        info!(plugin = %self.shared.full, endpoint = %self.endpoint.display(),
            events = ?self.shared.events, "serving");

        let mut stopped = self.shared.stop.subscribe();
        let stop = async move {
            tokio::select! {
                _ = stop => {}
                _ = stopped.wait_for(|s| *s) => {}
            }
        };
        let result = self.register_loop(stop, &health, &mut serve_done).await;

        self.shared.end_session();
        let _ = serve_stop.send(());
        // Connections close at nrid's pace after GOAWAY; do not wait long.
        let abort = server.abort_handle();
        if tokio::time::timeout(Duration::from_secs(2), server).await.is_err() {
            abort.abort();
        }
        remove_socket(&self.endpoint);
        match &result {
            Ok(exit) => info!(plugin = %self.shared.full, ?exit, "stopped"),
            Err(e) => error!(plugin = %self.shared.full, error = %e, "stopped"),
        }
        result
    }

    async fn register_loop<F: Future<Output = ()>>(
        &self,
        stop: F,
        health: &tonic_health::server::HealthReporter,
        serve_done: &mut oneshot::Receiver<Result<(), String>>,
    ) -> Result<Exit, Error> {
        let mut stop = std::pin::pin!(stop);
        let mut bo = Backoff::new(self.backoff.0, self.backoff.1);
        let mut failures = 0u32;
        let mut back = false; // nrid just came back
        loop {
            let res = tokio::select! {
                r = self.session(health) => r,
                _ = &mut stop => return Ok(Exit::Stopped),
                r = &mut *serve_done => return Err(Error::Serve(serve_error(r))),
            };
            health.set_service_status("", tonic_health::ServingStatus::NotServing).await;
            health.set_not_serving::<PluginServiceName>().await;
            if res.registered {
                bo.reset();
                failures = 0;
            }
            let fresh = res.registered || back;
            back = false;
            let kind = res.shutdown.as_ref().map(|s| s.kind());
            if kind == Some(ShutdownKind::Replaced) {
                info!(plugin = %self.shared.full, "replaced by a newer instance; not registering again");
                return Ok(Exit::Replaced);
            }
            let (retry, long) = retryable(res.err.as_ref());
            if !retry {
                let st = res.err.expect("a non-retryable end has an error");
                error!(plugin = %self.shared.full, reason = %crate::rpc::reason(&st), code = ?st.code(),
                    message = st.message(), "registration refused");
                return Err(Error::Refused(st));
            }
            if !res.registered {
                failures += 1;
            }
            if !long && !reachable(&self.server).await {
                // nrid is away (stopped, crashed, restarting). The backoff
                // would still be growing when it is back: poll its socket
                // instead, and register as soon as it accepts connections.
                self.log_retry(&res, failures, "when nrid accepts connections");
                tokio::select! {
                    _ = await_server(&self.server) => {}
                    _ = &mut stop => return Ok(Exit::Stopped),
                    r = &mut *serve_done => return Err(Error::Serve(serve_error(r))),
                }
                bo.reset();
                back = true;
                continue;
            }
            // nrid serves: back off with jitter, so that a refused plugin
            // does not hammer it. The first retry after a registration ended,
            // or after nrid came back, comes quickly.
            let mut delay = bo.next();
            if long {
                delay = self.backoff.1;
            } else if fresh {
                delay = bo.jitter(FIRST_RETRY.min(self.backoff.0));
            }
            self.log_retry(&res, failures, &format!("in {delay:?}"));
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = &mut stop => return Ok(Exit::Stopped),
                r = &mut *serve_done => return Err(Error::Serve(serve_error(r))),
            }
        }
    }

    /// Logs how a registration ended and when the next one starts: failures
    /// after the first one at debug level.
    fn log_retry(&self, res: &SessionResult, failures: u32, retry: &str) {
        let err = res.err.as_ref().map(|s| format!("{:?}: {}", s.code(), s.message())).unwrap_or_default();
        let shutdown = res.shutdown.as_ref().map(|s| format!("{:?}: {}", s.kind(), s.reason)).unwrap_or_default();
        if res.registered {
            info!(plugin = %self.shared.full, retry, error = %err, shutdown = %shutdown,
                "registration ended; registering again");
        } else if failures == 1 {
            warn!(plugin = %self.shared.full, retry, error = %err, shutdown = %shutdown,
                server = %self.server.display(),
                "registration failed; retrying with backoff (further failures are logged at debug level)");
        } else {
            debug!(plugin = %self.shared.full, retry, error = %err, "registration failed; retrying");
        }
    }

    /// One registration: RegisterPlugin, then reading the stream until it
    /// ends.
    async fn session(&self, health: &tonic_health::server::HealthReporter) -> SessionResult {
        let channel = connect(self.server.clone(), self.shared.server_uid.clone());
        {
            let mut st = self.shared.lock();
            *st = State { pending: true, channel: Some(channel.clone()), ..State::default() };
        }
        let client_channel = channel.clone();
        let mut client =
            RuntimeServiceClient::new(channel).max_decoding_message_size(DEFAULT_MAX_MESSAGE_SIZE as usize);
        self.shared.registering.store(true, Ordering::SeqCst);
        let (request, generation) = self.register_request();
        let first = async {
            let mut stream = client.register_plugin(request).await?.into_inner();
            match stream.message().await? {
                Some(m) => match m.message {
                    Some(RegisterMessage::Registered(reg)) => Ok((stream, reg)),
                    None => Err(Status::internal("the server's first message is not Registered")),
                },
                None => Err(Status::unknown("the registration stream ended before Registered")),
            }
        }
        .await;
        let (mut stream, reg) = match first {
            Ok(v) => v,
            Err(st) => {
                self.shared.registering.store(false, Ordering::SeqCst);
                let shutdown = self.shared.lock().shutdown.take();
                self.shared.end_session();
                return SessionResult { registered: false, shutdown, err: Some(st) };
            }
        };
        {
            let mut st = self.shared.lock();
            st.pending = false;
            if st.instance.as_deref() != Some(reg.instance_id.as_str()) {
                warn!(plugin = %self.shared.full, configured = ?st.instance, registered = %reg.instance_id,
                    "Registered names another instance than Configure");
                st.instance = Some(reg.instance_id.clone());
            }
        }
        info!(plugin = %self.shared.full, instance = %reg.instance_id, server = %reg.server_version,
            runtime = %reg.runtime_name, identity = %reg.identity, events = ?EventMask::from_bits(reg.events),
            selectors = reg.selectors.len(), "registered");
        health.set_service_status("", tonic_health::ServingStatus::Serving).await;
        health.set_serving::<PluginServiceName>().await;
        let instance = reg.instance_id.clone();
        let changed = {
            // Under the report's lock: see PluginHandle::set_status.
            let r = self.shared.report();
            self.shared.registered.send_replace(Some(reg));
            self.shared.registering.store(false, Ordering::SeqCst);
            r.generation != generation
        };
        if changed {
            // The status changed while the registration was pending: its
            // request carried an older one.
            let (shared, channel) = (self.shared.clone(), client_channel.clone());
            tokio::spawn(async move {
                if let Err(e) = shared.send_status(channel, &instance).await {
                    debug!(plugin = %shared.full, error = %e, "status not sent");
                }
            });
        }

        let err = loop {
            match stream.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => break None,
                Err(st) => break Some(st),
            }
        };
        let shutdown = self.shared.lock().shutdown.take();
        self.shared.end_session();
        SessionResult { registered: true, shutdown, err }
    }

    /// The registration request, and the status generation it carries.
    fn register_request(&self) -> (RegisterPluginRequest, u64) {
        let r = self.shared.report();
        let req = RegisterPluginRequest {
            plugin_name: self.name.clone(),
            plugin_idx: self.index.clone(),
            nri_version: crate::NRI_VERSION.to_owned(),
            endpoint: format!("unix://{}", self.endpoint.display()),
            capabilities: Some(self.caps),
            timeouts: self.timeouts.clone(),
            plugin_version: self.plugin_version.clone(),
            selectors: self.selectors.clone(),
            status: r.status as i32,
            status_reason: r.reason.clone(),
        };
        (req, r.generation)
    }
}

/// The health service name of PluginService.
struct PluginServiceName;
impl tonic::server::NamedService for PluginServiceName {
    const NAME: &'static str = "nri.v1beta1.PluginService";
}

fn serve_error(r: Result<Result<(), String>, oneshot::error::RecvError>) -> String {
    match r {
        Ok(Ok(())) => "the server stopped".into(),
        Ok(Err(e)) => e,
        Err(_) => "the server task ended".into(),
    }
}

/// A lazy connection to nrid's socket. Every connection records the uid of
/// the process behind the socket (SO_PEERCRED) in `uid`: the SDK accepts
/// incoming calls from that uid.
fn connect(path: PathBuf, uid: Arc<AtomicI64>) -> Channel {
    Endpoint::from_static("http://localhost")
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONN_WINDOW)
        .connect_with_connector_lazy(tower::service_fn(move |_: tonic::codegen::http::Uri| {
            let (path, uid) = (path.clone(), uid.clone());
            async move {
                let s = tokio::net::UnixStream::connect(&path).await?;
                if let Ok(c) = s.peer_cred() {
                    uid.store(i64::from(c.uid()), Ordering::SeqCst);
                }
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
            }
        }))
}

/// Listens on the endpoint: creates its directory (0755) if needed, removes
/// a stale socket file (never another kind of file, nor a socket in use),
/// and makes the socket 0600.
fn listen(path: &Path) -> Result<tokio::net::UnixListener, Error> {
    let io = |what: &str, e| Error::Io(format!("{what} {}", path.display()), e);
    if let Some(dir) = path.parent()
        && !dir.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| io("creating the directory of", e))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(md) if !md.file_type().is_socket() => {
            return Err(Error::Io(
                format!("listening on {}", path.display()),
                std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the file exists and is not a socket"),
            ));
        }
        Ok(_) => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(Error::Io(
                    format!("listening on {}", path.display()),
                    std::io::Error::new(std::io::ErrorKind::AddrInUse, "the socket is in use by another process"),
                ));
            }
            std::fs::remove_file(path).map_err(|e| io("removing the stale socket", e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("checking", e)),
    }
    let l = tokio::net::UnixListener::bind(path).map_err(|e| io("listening on", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| io("chmod", e))?;
    Ok(l)
}

fn remove_socket(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(path);
    }
}

/// How a registration attempt ended (docs/PROTOCOL.md §12): whether to try
/// again, and whether with the longest backoff.
fn retryable(err: Option<&Status>) -> (bool, bool) {
    let Some(st) = err else { return (true, false) };
    let reason = crate::rpc::reason(st);
    match RegistrationRefusal::from_str_name(&reason) {
        Some(
            RegistrationRefusal::InvalidName
            | RegistrationRefusal::InvalidIndex
            | RegistrationRefusal::InvalidEndpoint
            | RegistrationRefusal::InvalidEvents
            | RegistrationRefusal::InvalidCapabilities
            | RegistrationRefusal::NotPermitted
            | RegistrationRefusal::PeerMismatch
            | RegistrationRefusal::InvalidSelectors,
        ) => return (false, false),
        Some(RegistrationRefusal::IdentityMismatch) => return (true, true),
        _ => {}
    }
    if reason.is_empty()
        && matches!(
            st.code(),
            Code::Unauthenticated | Code::PermissionDenied | Code::InvalidArgument | Code::Unimplemented
        )
    {
        return (false, false);
    }
    (true, false)
}

/// Bound of the first delay after a registration ended while nrid still
/// accepts connections (an eviction, a graceful stop not done yet).
const FIRST_RETRY: Duration = Duration::from_millis(50);
/// How often a plugin tries to connect to an absent nrid.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Whether a process listens on the unix socket path: a connect, closed at
/// once, without any gRPC traffic. A refused connection or a missing socket
/// file means nrid is away.
async fn reachable(path: &Path) -> bool {
    tokio::net::UnixStream::connect(path).await.is_ok()
}

/// Returns once nrid accepts connections on its socket again, trying to
/// connect every POLL_INTERVAL.
async fn await_server(path: &Path) {
    let mut tick = tokio::time::interval(POLL_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if reachable(path).await {
            return;
        }
    }
}

/// Exponential backoff with jitter: each delay is drawn from [d/2, d], where
/// d doubles from min up to max.
struct Backoff {
    min: Duration,
    max: Duration,
    cur: Duration,
    rng: u64,
}

impl Backoff {
    fn new(min: Duration, max: Duration) -> Self {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
            ^ (u64::from(std::process::id()) << 32);
        Backoff { min, max, cur: Duration::ZERO, rng: seed | 1 }
    }

    fn next(&mut self) -> Duration {
        self.cur = if self.cur.is_zero() { self.min } else { (self.cur * 2).min(self.max) };
        self.jitter(self.cur)
    }

    /// A delay drawn from [d/2, d].
    fn jitter(&mut self, d: Duration) -> Duration {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let half = d / 2;
        let span = half.as_nanos() as u64 + 1;
        half + Duration::from_nanos(r % span)
    }

    fn reset(&mut self) {
        self.cur = Duration::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("ulimit-adjuster_1.0+x").is_ok());
        assert!(check_name("").is_err() && check_name("a b").is_err() && check_name("a/b").is_err());
        assert!(check_index("07").is_ok());
        assert!(check_index("7").is_err() && check_index("100").is_err() && check_index("a1").is_err());
        assert_eq!(parse_plugin_file_name("10-foo"), Some(("10", "foo")));
        assert_eq!(parse_plugin_file_name("10foo"), None);
        assert_eq!(parse_plugin_file_name("1-foo"), None);
        assert_eq!(parse_plugin_file_name("10-"), None);
        assert_eq!(parse_plugin_file_name("é0-foo"), None);
    }

    #[test]
    fn targets() {
        assert_eq!(socket_path("unix:///run/x.sock").unwrap(), PathBuf::from("/run/x.sock"));
        assert_eq!(socket_path("unix:/run//x.sock").unwrap(), PathBuf::from("/run/x.sock"));
        assert_eq!(socket_path("/run/x.sock").unwrap(), PathBuf::from("/run/x.sock"));
        assert!(socket_path("dns:///host:1").is_err());
        assert!(socket_path("relative.sock").is_err());
    }

    #[test]
    fn backoff() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let d: Vec<Duration> = (0..6).map(|_| b.next()).collect();
        assert!(d[0] >= Duration::from_millis(50) && d[0] <= Duration::from_millis(100), "{d:?}");
        assert!(d[1] >= Duration::from_millis(100) && d[1] <= Duration::from_millis(200), "{d:?}");
        assert!(d[5] >= Duration::from_millis(500) && d[5] <= Duration::from_secs(1), "{d:?}");
        b.reset();
        assert!(b.next() <= Duration::from_millis(100));
    }

    #[test]
    fn retry_classes() {
        assert_eq!(retryable(None), (true, false));
        assert_eq!(retryable(Some(&Status::unavailable("nrid not running"))), (true, false));
        assert_eq!(retryable(Some(&Status::permission_denied("no"))), (false, false));
        assert_eq!(retryable(Some(&Status::failed_precondition("configure failed"))), (true, false));
    }
}
