// The plugin runtime: serving PluginService, registering, staying registered.

import * as fs from "node:fs";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as path from "node:path";

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type ConnectRouter, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { eventMask, eventName, eventNames, handlerName, EVENTS, type EventHandlerName } from "./events.js";
import { HealthCheckResponseSchema, HealthService, ServingStatus } from "./health.js";
import { addReflection } from "./reflection.js";
import {
  type Capabilities,
  CapabilitiesSchema,
  type ConfigureRequest,
  type ConfigureResponse,
  ConfigureResponseSchema,
  type CreateContainerRequest,
  type CreateContainerResponseSchema,
  type PostCreateContainerRequest,
  type PostCreateContainerResponseSchema,
  type PostStartContainerRequest,
  type PostStartContainerResponseSchema,
  type PostUpdateContainerRequest,
  type PostUpdateContainerResponseSchema,
  type PostUpdatePodSandboxRequest,
  type PostUpdatePodSandboxResponseSchema,
  PluginService,
  type RemoveContainerRequest,
  type RemoveContainerResponseSchema,
  type RemovePodSandboxRequest,
  type RemovePodSandboxResponseSchema,
  type RunPodSandboxRequest,
  type RunPodSandboxResponseSchema,
  type ShutdownRequest,
  ShutdownKind,
  ShutdownResponseSchema,
  type StartContainerRequest,
  type StartContainerResponseSchema,
  type StopContainerRequest,
  type StopContainerResponseSchema,
  type StopPodSandboxRequest,
  type StopPodSandboxResponseSchema,
  SyncReason,
  type SynchronizeRequest,
  SynchronizeRequestSchema,
  type SynchronizeResponse,
  SynchronizeResponseSchema,
  type Timeouts as TimeoutsMessage,
  TimeoutsSchema,
  type UpdateContainerRequest,
  type UpdateContainerResponseSchema,
  type UpdatePodSandboxRequest,
  type UpdatePodSandboxResponseSchema,
  type ValidateContainerAdjustmentRequest,
  type ValidateContainerAdjustmentResponseSchema,
} from "./gen/nri/v1beta1/plugin_service_pb.js";
import {
  type RegisterPluginRequest,
  RegisterPluginRequestSchema,
  type Registered,
  RuntimeService,
} from "./gen/nri/v1beta1/runtime_service_pb.js";
import {
  type Container,
  type ContainerEviction,
  type ContainerUpdate,
  type Event,
  type EventSelector,
  type FailurePolicy,
  FailurePolicySchema,
  type PodSandbox,
  PluginStatus,
} from "./gen/nri/v1beta1/types_pb.js";
import { checkReason, checkSelectors, checkStatus, type EventSelectorInit, type StatusInit } from "./selectors.js";
import { NotRegisteredError, RegistrationRefusedError } from "./errors.js";
import { Update } from "./adjust.js";
import { NRI_VERSION } from "./version.js";

/** nrid's default socket, as a gRPC target. */
export const DEFAULT_SERVER_ADDRESS = "unix:///var/run/nri/nri-grpc.sock";
/** Directory of the default plugin endpoint (NN-name.sock): nrid's default plugin socket directory. */
export const DEFAULT_SOCKET_DIR = "/var/run/nri/plugins";
/** Set by nrid for the plugins it launches; they win over the options (docs/PROTOCOL.md section 14). */
export const ENV_PLUGIN_NAME = "NRI_GRPC_PLUGIN_NAME";
export const ENV_PLUGIN_IDX = "NRI_GRPC_PLUGIN_IDX";
export const ENV_SERVER_ADDRESS = "NRI_GRPC_SERVER_ADDRESS";
export const ENV_PLUGIN_ENDPOINT = "NRI_GRPC_PLUGIN_ENDPOINT";
/** Call metadata key of the instance id a call is addressed to. */
export const METADATA_INSTANCE_ID = "nri-instance-id";

const ERROR_DOMAIN = "nri.v1beta1";
const DEFAULT_MAX_MESSAGE_SIZE = 4 << 20;
const MAX_SOCKET_PATH = 107;
const PLUGIN_SERVICE = "nri.v1beta1.PluginService";

/** Refusals that retrying cannot fix (docs/PROTOCOL.md section 12). */
const FATAL_REFUSALS = new Set([
  "REGISTRATION_REFUSAL_INVALID_NAME",
  "REGISTRATION_REFUSAL_INVALID_INDEX",
  "REGISTRATION_REFUSAL_INVALID_ENDPOINT",
  "REGISTRATION_REFUSAL_INVALID_EVENTS",
  "REGISTRATION_REFUSAL_INVALID_CAPABILITIES",
  "REGISTRATION_REFUSAL_NOT_PERMITTED",
  "REGISTRATION_REFUSAL_PEER_MISMATCH",
  "REGISTRATION_REFUSAL_INVALID_SELECTORS",
]);
const FATAL_CODES = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.InvalidArgument, Code.Unimplemented]);

type MaybePromise<T> = T | Promise<T>;
type Rsp<S extends Parameters<typeof create>[0]> = MessageInitShape<S> | void | undefined;

/** What a handler knows about the call it handles. */
export interface CallContext {
  /** The instance id the call is addressed to (the current one). */
  readonly instanceId: string;
  /** The node nrid runs on (nri-node-name). */
  readonly nodeName: string;
  /** The container runtime behind nrid (nri-runtime-name). */
  readonly runtimeName: string;
  /** All call metadata. */
  readonly requestHeader: Headers;
  /** Aborted when the call's deadline passes or nrid cancels it. */
  readonly signal: AbortSignal;
  /** Milliseconds left until the call's deadline (nrid sets one on every call), undefined without one. */
  timeRemainingMs(): number | undefined;
  /** The plugin, for example to call updateContainers after replying. */
  readonly plugin: Plugin;
}

/**
 * The handlers of a plugin: implement those of the events you want; the
 * subscription is derived from them. Each gets the request and a
 * CallContext and returns the response (a message or an init object such as
 * `{ adjust }`), or nothing for an empty one.
 *
 * Errors: on a creating event (runPodSandbox, updatePodSandbox,
 * createContainer, startContainer, updateContainer) a thrown error vetoes
 * the operation. A ConnectError reaches nrid with its code (do not use
 * Unavailable, DeadlineExceeded, ResourceExhausted, Canceled or
 * Unimplemented to say no: they mean "could not answer"); any other error
 * becomes FAILED_PRECONDITION with its message. On notification and teardown
 * events errors are only recorded. A validator's error is a rejection with
 * the error's message as the reason.
 */
export interface Handlers {
  /** Configure: read the config and the server's identity; may narrow the subscription (events) or set the failure policy. */
  configure?(req: ConfigureRequest, ctx: CallContext): MaybePromise<Rsp<typeof ConfigureResponseSchema>>;
  /** The full state of the runtime, once per registration (the SDK collects the pages). May return updates and evictions. */
  synchronize?(req: SynchronizeRequest, ctx: CallContext): MaybePromise<Rsp<typeof SynchronizeResponseSchema>>;
  /** A resynchronization (epoch 2 and up), with the full new state: replace your view. Implementing it declares the resync capability. */
  resync?(req: SynchronizeRequest, ctx: CallContext): MaybePromise<Rsp<typeof SynchronizeResponseSchema>>;
  /** nrid ends the registration; answer quickly. */
  shutdown?(req: ShutdownRequest, ctx: CallContext): MaybePromise<void>;
  runPodSandbox?(req: RunPodSandboxRequest, ctx: CallContext): MaybePromise<Rsp<typeof RunPodSandboxResponseSchema>>;
  updatePodSandbox?(req: UpdatePodSandboxRequest, ctx: CallContext): MaybePromise<Rsp<typeof UpdatePodSandboxResponseSchema>>;
  postUpdatePodSandbox?(req: PostUpdatePodSandboxRequest, ctx: CallContext): MaybePromise<Rsp<typeof PostUpdatePodSandboxResponseSchema>>;
  stopPodSandbox?(req: StopPodSandboxRequest, ctx: CallContext): MaybePromise<Rsp<typeof StopPodSandboxResponseSchema>>;
  removePodSandbox?(req: RemovePodSandboxRequest, ctx: CallContext): MaybePromise<Rsp<typeof RemovePodSandboxResponseSchema>>;
  createContainer?(req: CreateContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof CreateContainerResponseSchema>>;
  postCreateContainer?(req: PostCreateContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof PostCreateContainerResponseSchema>>;
  startContainer?(req: StartContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof StartContainerResponseSchema>>;
  postStartContainer?(req: PostStartContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof PostStartContainerResponseSchema>>;
  updateContainer?(req: UpdateContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof UpdateContainerResponseSchema>>;
  postUpdateContainer?(req: PostUpdateContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof PostUpdateContainerResponseSchema>>;
  stopContainer?(req: StopContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof StopContainerResponseSchema>>;
  removeContainer?(req: RemoveContainerRequest, ctx: CallContext): MaybePromise<Rsp<typeof RemoveContainerResponseSchema>>;
  validateContainerAdjustment?(
    req: ValidateContainerAdjustmentRequest,
    ctx: CallContext,
  ): MaybePromise<Rsp<typeof ValidateContainerAdjustmentResponseSchema>>;
}

/** Call timeouts a plugin asks for, in milliseconds; unset leaves the server's default. nrid caps them by policy. */
export interface Timeouts {
  /** Default timeout of one call. */
  requestMs?: number;
  /** Budget of a whole synchronization (every page). */
  synchronizeMs?: number;
  /** Per-event overrides. */
  eventsMs?: Partial<Record<Event, number>>;
}

/** A minimal logger; console-compatible. */
export interface Logger {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** Options of a Plugin. */
export interface PluginOptions {
  /** Plugin name ([a-zA-Z0-9_.+-]); NRI_GRPC_PLUGIN_NAME wins. */
  name?: string;
  /** Two-digit index ("00" to "99"); NRI_GRPC_PLUGIN_IDX wins. Without name or index, both come from the program's "NN-name" file name. */
  index?: string;
  /** nrid's socket, "unix:///path" or a path (default /var/run/nri/nri-grpc.sock); NRI_GRPC_SERVER_ADDRESS wins. */
  serverAddress?: string;
  /** The socket to serve on (default NN-name.sock in socketDir); NRI_GRPC_PLUGIN_ENDPOINT wins. */
  endpoint?: string;
  /** nrid's plugin socket directory (default /var/run/nri/plugins). */
  socketDir?: string;
  /** Mode of the endpoint socket (default 0o600; see Plugin). */
  socketMode?: number;
  /** Capabilities to declare. */
  maxConcurrentCalls?: number;
  maxMessageSize?: number;
  dryRun?: boolean;
  /** Declare resync (also declared by a resync handler). */
  resync?: boolean;
  timeouts?: Timeouts;
  /** The failure policy to ask for (a configure handler may override it per registration). */
  failurePolicy?: { failRequest?: boolean; keepConnected?: boolean };
  /** Shown by AdminService. */
  pluginVersion?: string;
  /**
   * Event selectors: receive only the events, and the Synchronize state, of
   * the pods and containers one of them matches (default: everything). Sent
   * with every registration; registered.selectors is what nrid put in effect.
   */
  selectors?: EventSelectorInit[];
  /**
   * The status to register with (default READY; NOT_READY for a plugin that
   * must warm up first, then setStatus). After setStatus every later
   * registration (nrid restarted) carries the last status reported.
   */
  status?: StatusInit;
  /** Reason of status (UTF-8, at most 1024 bytes). */
  statusReason?: string;
  /** Default: console at info level, debug with NRI_GRPC_DEBUG=1. */
  logger?: Logger;
  /** [first, limit] of the re-registration backoff in ms (default [100, 10000]), while nrid serves
   * and refuses; while nrid is away, the plugin registers as soon as its socket accepts connections. */
  backoffMs?: [number, number];
  /** Default deadline of updateContainers, setStatus and requestResync in ms (default 10000). */
  updateTimeoutMs?: number;
}

/** Why Plugin.run resolved: "stopped" after stop(), "replaced" when a newer instance took over. */
export type RunResult = "stopped" | "replaced";

/** Throws unless name is a valid plugin name. */
export function checkName(name: string): void {
  if (!name) throw new Error("plugin name is empty");
  const bad = /[^a-zA-Z0-9_.+-]/.exec(name);
  if (bad) throw new Error(`plugin name "${name}" contains "${bad[0]}"; allowed are [a-zA-Z0-9_.+-]`);
}

/** Throws unless idx is exactly two ASCII digits. */
export function checkIndex(idx: string): void {
  if (!/^[0-9]{2}$/.test(idx)) throw new Error(`plugin index "${idx}" must be exactly two ASCII digits`);
}

/** Splits a "NN-name" plugin file name into [index, name], or undefined. */
export function parseName(s: string): [string, string] | undefined {
  if (s.length < 4 || s[2] !== "-") return undefined;
  try {
    checkIndex(s.slice(0, 2));
    checkName(s.slice(3));
  } catch {
    return undefined;
  }
  return [s.slice(0, 2), s.slice(3)];
}

/** The socket path of a "unix:///abs", "unix:abs" or "/abs" target. */
export function socketPath(target: string): string {
  let p = target;
  if (p.startsWith("unix://")) p = p.slice("unix://".length);
  else if (p.startsWith("unix:")) p = p.slice("unix:".length);
  if (!path.isAbsolute(p)) throw new Error(`"${target}" is not an absolute unix socket path (TCP is not supported by this SDK)`);
  return path.normalize(p);
}

/** The nri.v1beta1 google.rpc.ErrorInfo reason and metadata of an error, if any. */
export function errorInfo(err: ConnectError): { reason: string; metadata: Record<string, string> } | undefined {
  for (const d of err.details) {
    if (!("type" in d) || d.type !== "google.rpc.ErrorInfo") continue;
    // ErrorInfo: reason = 1, domain = 2, metadata = 3 (map<string, string>).
    const r = new BinaryReader(d.value);
    let reason = "";
    let domain = "";
    const metadata: Record<string, string> = {};
    while (r.pos < r.len) {
      const [no, wt] = r.tag();
      if (no === 1) reason = r.string();
      else if (no === 2) domain = r.string();
      else if (no === 3) {
        const e = new BinaryReader(r.bytes());
        let k = "";
        let v = "";
        while (e.pos < e.len) {
          const [eno, ewt] = e.tag();
          if (eno === 1) k = e.string();
          else if (eno === 2) v = e.string();
          else e.skip(ewt);
        }
        metadata[k] = v;
      } else r.skip(wt);
    }
    if (domain === ERROR_DOMAIN) return { reason, metadata };
  }
  return undefined;
}

function retryable(err: ConnectError | undefined): [boolean, boolean] {
  if (!err) return [true, false];
  const reason = errorInfo(err)?.reason ?? "";
  if (FATAL_REFUSALS.has(reason)) return [false, false];
  if (reason === "REGISTRATION_REFUSAL_IDENTITY_MISMATCH") return [true, true];
  if (!reason && FATAL_CODES.has(err.code)) return [false, false];
  return [true, false];
}

/** The status a handler's error becomes. */
function toConnectError(e: unknown): ConnectError {
  if (e instanceof ConnectError) return e;
  if (e instanceof Error && (e.name === "AbortError" || e.name === "TimeoutError")) {
    return new ConnectError(e.message || "timed out", e.name === "TimeoutError" ? Code.DeadlineExceeded : Code.Canceled);
  }
  const msg = e instanceof Error ? e.message || e.name : String(e);
  return new ConnectError(msg, Code.FailedPrecondition);
}

function consoleLogger(prefix: string): Logger {
  const debug = process.env.NRI_GRPC_DEBUG === "1";
  return {
    debug: (m) => debug && console.error(`DEBUG ${prefix}: ${m}`),
    info: (m) => console.error(`INFO ${prefix}: ${m}`),
    warn: (m) => console.error(`WARN ${prefix}: ${m}`),
    error: (m) => console.error(`ERROR ${prefix}: ${m}`),
  };
}

/** Bound of the first delay after a registration ended while nrid still
 * accepts connections (an eviction, a graceful stop not done yet). */
const FIRST_RETRY_MS = 50;
/** How often a plugin tries to connect to an absent nrid. */
const POLL_INTERVAL_MS = 50;

/** Whether a process listens on the unix socket path: a connect, closed at
 * once, without any gRPC traffic. A refused connection or a missing socket
 * file means nrid is away. */
function reachable(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.createConnection(socket);
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => {
      c.destroy();
      resolve(false);
    });
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}

interface Session {
  sm: Http2SessionManager;
  client: ReturnType<typeof createClient<typeof RuntimeService>>;
  instance: string;
  /** The status generation the RegisterPluginRequest carried. */
  statusGen: number;
}

interface SessionResult {
  registered: boolean;
  shutdown?: ShutdownRequest;
  err?: ConnectError;
}

/**
 * An NRI plugin: serves PluginService on its unix socket with Connect's
 * gRPC protocol (HTTP/2 over the socket, which nrid's grpc-go client
 * speaks), registers with nrid and stays registered until stop().
 *
 * Authentication: Node exposes no peer credentials (SO_PEERCRED) of a unix
 * socket connection, so this SDK cannot check the caller's uid the way the Go
 * SDK does. Instead the endpoint is created with mode 0600 (socketMode) and
 * owned by the plugin's uid, without a window where it is more open (it is
 * bound in a fresh 0700 directory, chmod-ed, then renamed into place): only
 * processes of the plugin's own uid and root can connect. nrid runs as root,
 * or as the plugin's uid (its endpoint policy requires the listening process
 * to have the registrant's uid, and it dials the socket itself).
 */
export class Plugin {
  /** The plugin name and index, and the full name "NN-name". */
  readonly name: string;
  readonly index: string;
  readonly fullName: string;
  /** The gRPC target the plugin serves on and registers. */
  readonly endpoint: string;
  /** The event subscription derived from the handlers. */
  readonly events: number;
  /** The capabilities the plugin declares. */
  readonly capabilities: Capabilities;
  /** nrid's address. */
  readonly serverAddress: string;
  /** The uid owning nrid's socket file, once learned (Node has no SO_PEERCRED). */
  serverUid: number | undefined;
  /** True once a newer instance took over. */
  replaced = false;

  private readonly h: Handlers;
  private readonly log: Logger;
  private readonly serverPath: string;
  private readonly endpointPath: string;
  private readonly socketMode: number;
  private readonly timeouts?: TimeoutsMessage;
  private readonly failurePolicy?: FailurePolicy;
  private readonly pluginVersion: string;
  private readonly backoff: [number, number];
  private readonly updateTimeoutMs: number;
  private readonly selectorList: EventSelector[];
  // The status registrations carry: the options', then the last one
  // setStatus was given. statusGen counts changes, so that a change made
  // while a registration was pending is sent after it.
  private st: { status: PluginStatus; reason: string };
  private statusGen = 0;
  private statusChain: Promise<unknown> = Promise.resolve();

  private running = false;
  private stopper?: AbortController;
  private pending?: Session;
  private current?: Session;
  private instance = "";
  private reg?: Registered;
  private waiters: (() => void)[] = [];
  private lastShutdown?: ShutdownRequest;
  private sync?: { instance: string; epoch: bigint; pods: PodSandbox[]; containers: Container[] };
  private health = new Map<string, number>();
  private healthWatchers = new Set<() => void>();

  constructor(handlers: Handlers, options: PluginOptions = {}) {
    const env = process.env;
    let name = env[ENV_PLUGIN_NAME] || options.name;
    let index = env[ENV_PLUGIN_IDX] || options.index;
    if (!name || !index) {
      const parsed = parseName(path.basename(process.argv[1] ?? "", path.extname(process.argv[1] ?? "")));
      if (parsed) {
        index ||= parsed[0];
        name ||= parsed[1];
      }
    }
    try {
      checkName(name ?? "");
    } catch (e) {
      throw new Error(`${(e as Error).message} (set options.name or ${ENV_PLUGIN_NAME})`);
    }
    try {
      checkIndex(index ?? "");
    } catch (e) {
      throw new Error(`${(e as Error).message} (set options.index or ${ENV_PLUGIN_IDX})`);
    }
    this.name = name!;
    this.index = index!;
    this.fullName = `${this.index}-${this.name}`;
    this.log = options.logger ?? consoleLogger(this.fullName);
    this.h = handlers;

    let mask = 0;
    for (const e of EVENTS) {
      if (typeof handlers[handlerName(e)] === "function") mask |= eventMask(e);
    }
    if (mask === 0) {
      throw new Error(`the handlers implement no event; implement at least one of ${EVENTS.map(handlerName).join(", ")}`);
    }
    this.events = mask;

    this.serverAddress = env[ENV_SERVER_ADDRESS] || options.serverAddress || DEFAULT_SERVER_ADDRESS;
    this.serverPath = socketPath(this.serverAddress);
    this.endpointPath = socketPath(
      env[ENV_PLUGIN_ENDPOINT] || options.endpoint || path.join(options.socketDir ?? DEFAULT_SOCKET_DIR, this.fullName + ".sock"),
    );
    if (Buffer.byteLength(this.endpointPath) > MAX_SOCKET_PATH) {
      throw new Error(`endpoint "${this.endpointPath}" is longer than the ${MAX_SOCKET_PATH} bytes of a unix socket path`);
    }
    this.endpoint = "unix://" + this.endpointPath;
    this.socketMode = options.socketMode ?? 0o600;
    if (options.maxMessageSize && options.maxMessageSize < 64 << 10) {
      throw new Error(`maxMessageSize ${options.maxMessageSize} is below 65536 bytes`);
    }
    this.capabilities = create(CapabilitiesSchema, {
      maxConcurrentCalls: options.maxConcurrentCalls ?? 0,
      dryRun: options.dryRun ?? false,
      maxMessageSize: options.maxMessageSize ?? 0,
      resync: (options.resync ?? false) || typeof handlers.resync === "function",
    });
    if (options.timeouts) {
      const t = options.timeouts;
      const msg = create(TimeoutsSchema);
      if (t.requestMs !== undefined) {
        if (t.requestMs < 0) throw new Error("negative request timeout");
        msg.request = durationFromMs(t.requestMs);
      }
      if (t.synchronizeMs !== undefined) {
        if (t.synchronizeMs < 0) throw new Error("negative synchronize timeout");
        msg.synchronize = durationFromMs(t.synchronizeMs);
      }
      for (const e of EVENTS) {
        const ms = t.eventsMs?.[e];
        if (ms === undefined) continue;
        if (ms <= 0) throw new Error(`invalid timeout ${ms} for ${eventName(e)}`);
        msg.events.push({ $typeName: "nri.v1beta1.EventTimeout", event: e, timeout: durationFromMs(ms) });
      }
      this.timeouts = msg;
    }
    if (options.failurePolicy) this.failurePolicy = create(FailurePolicySchema, options.failurePolicy);
    this.pluginVersion = options.pluginVersion ?? "";
    const [first, limit] = options.backoffMs ?? [100, 10_000];
    if (first <= 0 || limit < first) throw new Error(`invalid backoff bounds ${first}, ${limit}`);
    this.backoff = [first, limit];
    this.updateTimeoutMs = options.updateTimeoutMs ?? 10_000;
    this.selectorList = checkSelectors(options.selectors ?? []);
    this.st = { status: checkStatus(options.status), reason: checkReason("statusReason", options.statusReason) };
  }

  /** The selectors the plugin registers with (empty: everything); the ones in effect are registered.selectors. */
  get selectors(): readonly EventSelector[] {
    return this.selectorList;
  }

  /** The status and reason the plugin reports: the last setStatus, else the options'. Every registration carries it. */
  get status(): { readonly status: PluginStatus; readonly reason: string } {
    return this.st;
  }

  /**
   * Reports the plugin's status to nrid: PluginStatus.READY, NOT_READY or
   * DEGRADED (or "READY", "NOT_READY", "DEGRADED"), with a reason for
   * operators (UTF-8, at most 1024 bytes).
   *
   * The status holds until the next report, across registrations: when the
   * plugin registers again (nrid restarted) it registers with the last
   * status, so a NOT_READY plugin stays NOT_READY. What NOT_READY means for
   * the plugin's events is nrid's policy (wait, fail or skip).
   *
   * While a registration is under way (in configure and the first
   * synchronize, which come before nrid's Registered) it never rejects: once
   * Configure named the instance the status is sent at once (nrid takes it
   * from Configure on), and in any case again as soon as the plugin is
   * registered.
   *
   * Throws an Error for an invalid status or reason; rejects with
   * NotRegisteredError while the plugin is not registered nor registering
   * (the status is kept and sent with the next registration), a ConnectError
   * when nrid refuses the call (the status is kept all the same).
   */
  async setStatus(status: StatusInit, reason = "", timeoutMs?: number): Promise<void> {
    const st = { status: checkStatus(status), reason: checkReason("reason", reason) };
    this.st = st;
    this.statusGen++;
    const s = this.current;
    const inst = this.instance;
    if (!s || !inst) {
      const p = this.pending;
      if (p) {
        // Sent once registered; at once too when Configure named the instance.
        if (p.instance) {
          await this.sendStatus(p, p.instance, st, timeoutMs).catch((e) =>
            this.log.debug(`status ${PluginStatus[st.status]} not sent yet: ${String(e)}`),
          );
        }
        return;
      }
      throw new NotRegisteredError(`plugin ${this.fullName} is not registered; status ${PluginStatus[st.status]} is sent with the next registration`);
    }
    await this.sendStatus(s, inst, st, timeoutMs);
  }

  /**
   * Asks nrid for the runtime's state again ("my view changed") and resolves
   * with the epoch of the Synchronize that will carry it. The state arrives
   * as a Synchronize with that epoch and reason
   * SyncReason.PLUGIN_REQUESTED, to the resync handler (or synchronize when
   * there is none). Requests made while one is pending are merged into it
   * (the same epoch comes back).
   *
   * nrid answers at once; the Synchronize follows, ordered with the plugin's
   * events like any resynchronization. Throws for an invalid reason; rejects
   * with NotRegisteredError while not registered, a ConnectError when nrid
   * refuses.
   */
  async requestResync(reason = "", timeoutMs?: number): Promise<bigint> {
    const r = checkReason("reason", reason);
    const s = this.current;
    const inst = this.instance;
    if (!s || !inst) throw new NotRegisteredError(`plugin ${this.fullName} is not registered; nothing to resynchronize`);
    const rsp = await s.client.requestResync(
      { reason: r },
      { timeoutMs: timeoutMs ?? this.updateTimeoutMs, headers: { [METADATA_INSTANCE_ID]: inst } },
    );
    this.log.debug(`resync requested (${r}): epoch ${rsp.epoch}`);
    return rsp.epoch;
  }

  /** SetPluginStatus on session s, one call at a time (reports reach nrid in the order they were made). */
  private sendStatus(s: Session, inst: string, st: { status: PluginStatus; reason: string }, timeoutMs?: number): Promise<void> {
    const call = this.statusChain.then(async () => {
      await s.client.setPluginStatus(
        { status: st.status, reason: st.reason },
        { timeoutMs: timeoutMs ?? this.updateTimeoutMs, headers: { [METADATA_INSTANCE_ID]: inst } },
      );
      this.log.info(`status ${PluginStatus[st.status]}: ${st.reason}`);
    });
    this.statusChain = call.catch(() => undefined);
    return call;
  }

  /** The server's answer to the current registration, or undefined. */
  get registered(): Registered | undefined {
    return this.reg;
  }

  /** The current instance id ("" when none). */
  get instanceId(): string {
    return this.instance;
  }

  /** Resolves with the registration once the plugin is registered; rejects after timeoutMs. */
  async waitRegistered(timeoutMs?: number): Promise<Registered> {
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    for (;;) {
      if (this.reg) return this.reg;
      await new Promise<void>((resolve, reject) => {
        let t: NodeJS.Timeout | undefined;
        const w = () => {
          if (t) clearTimeout(t);
          resolve();
        };
        this.waiters.push(w);
        if (deadline !== undefined) {
          t = setTimeout(() => {
            this.waiters = this.waiters.filter((x) => x !== w);
            reject(new Error(`plugin ${this.fullName}: not registered within ${timeoutMs} ms`));
          }, Math.max(0, deadline - Date.now()));
        }
      });
    }
  }

  /** Makes run resolve "stopped": the registration is cancelled (nrid unregisters the plugin) and the endpoint closed. */
  stop(): void {
    this.stopper?.abort();
  }

  /**
   * Asks nrid for unsolicited updates and evictions of existing containers;
   * resolves with those that could not be applied.
   *
   * Never await it in a handler for a container of the pod whose event is
   * being handled: the update waits for that event, which waits for the
   * handler. Return the update in the response instead, or send it after
   * replying. Rejects with NotRegisteredError while not registered, a
   * ConnectError when nrid refuses.
   */
  async updateContainers(
    updates: (ContainerUpdate | Update)[] = [],
    evictions: ContainerEviction[] = [],
    timeoutMs?: number,
  ): Promise<{ failed: ContainerUpdate[]; failedEvictions: ContainerEviction[] }> {
    const s = this.current;
    const inst = this.instance;
    if (!s || !inst) throw new NotRegisteredError(`plugin ${this.fullName} is not registered`);
    const rsp = await s.client.updateContainers(
      { update: updates.map((u) => (u instanceof Update ? u.proto : u)), evict: evictions },
      { timeoutMs: timeoutMs ?? this.updateTimeoutMs, headers: { [METADATA_INSTANCE_ID]: inst } },
    );
    return { failed: rsp.failed, failedEvictions: rsp.failedEvictions };
  }

  /**
   * Serves the plugin, registers it and keeps it registered until stop():
   * when the registration ends (nrid stopped or restarted, the session broke,
   * the plugin was evicted) it registers again: while nrid is away, as soon as
   * its socket accepts connections again; while nrid serves, with exponential
   * backoff and jitter. Resolves "stopped" after stop(), "replaced" when a newer instance
   * took over. Rejects with RegistrationRefusedError when nrid refused the
   * registration for a reason retrying cannot fix, or when the endpoint
   * cannot be created. The endpoint is removed when run settles.
   */
  async run(): Promise<RunResult> {
    if (this.running) throw new Error(`plugin ${this.fullName}: run is already running`);
    this.running = true;
    this.stopper = new AbortController();
    const server = await this.serve();
    try {
      return await this.loop(this.stopper.signal);
    } finally {
      this.end();
      this.setHealth(ServingStatus.NOT_SERVING);
      await server.close();
      this.removeEndpoint();
      this.running = false;
      this.log.info("stopped");
    }
  }

  // ------------------------------------------------------------ internals

  private notify(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  private end(): void {
    this.instance = "";
    this.sync = undefined;
    this.current = undefined;
    if (this.reg) {
      this.reg = undefined;
      this.notify();
    }
  }

  private async loop(stop: AbortSignal): Promise<RunResult> {
    let cur = 0;
    const [first, limit] = this.backoff;
    let failures = 0;
    let back = false; // nrid just came back
    for (;;) {
      const res = await this.session(stop);
      if (stop.aborted) return "stopped";
      if (res.registered) {
        cur = 0;
        failures = 0;
      }
      const fresh = res.registered || back;
      back = false;
      if (res.shutdown?.kind === ShutdownKind.REPLACED) {
        this.log.info("replaced by a newer instance; not registering again");
        this.replaced = true;
        return "replaced";
      }
      const [retry, long] = retryable(res.err);
      if (!retry) {
        const err = res.err!;
        const info = errorInfo(err);
        this.log.error(`registration refused: ${Code[err.code]}: ${err.rawMessage}`);
        throw new RegistrationRefusedError(err.code, err.rawMessage, info?.reason ?? "", info?.metadata.field ?? "");
      }
      if (!res.registered) failures++;
      if (!long && !(await reachable(this.serverPath))) {
        // nrid is away (stopped, crashed, restarting). The backoff would
        // still be growing when it is back: watch its socket instead, and
        // register as soon as it accepts connections.
        this.logRetry(res, failures, "when nrid accepts connections");
        if (!(await this.awaitServer(stop))) return "stopped";
        cur = 0;
        back = true;
        continue;
      }
      // nrid serves: back off with jitter, so that a refused plugin does not
      // hammer it. The first retry after a registration ended, or after nrid
      // came back, comes quickly.
      cur = cur === 0 ? first : Math.min(2 * cur, limit);
      let delay = cur / 2 + Math.random() * (cur / 2);
      if (long) delay = limit;
      else if (fresh) {
        const d = Math.min(FIRST_RETRY_MS, first);
        delay = d / 2 + Math.random() * (d / 2);
      }
      this.logRetry(res, failures, `in ${Math.round(delay)} ms`);
      await sleep(delay, stop);
      if (stop.aborted) return "stopped";
    }
  }

  /** Logs how a registration ended and when the next one starts: failures
   * after the first one at debug level. */
  private logRetry(res: SessionResult, failures: number, when: string): void {
    let detail = res.err ? `: ${Code[res.err.code]}: ${res.err.rawMessage}` : "";
    if (res.shutdown) detail += ` (shutdown ${ShutdownKind[res.shutdown.kind]}: ${res.shutdown.reason})`;
    if (res.registered) this.log.info(`registration ended${detail}; registering again ${when}`);
    else if (failures === 1)
      this.log.warn(`registration with ${this.serverAddress} failed${detail}; retrying ${when} (further failures are logged at debug level)`);
    else this.log.debug(`registration failed${detail}; retrying ${when}`);
  }

  /** Waits until nrid accepts connections on its socket again: it watches
   * the socket's directory (fs.watch) and tries to connect on every change
   * and every POLL_INTERVAL_MS in any case (a directory not there yet, or
   * replaced). False when stopped meanwhile. */
  private async awaitServer(stop: AbortSignal): Promise<boolean> {
    let changed = false;
    let wake: (() => void) | undefined;
    let watcher: fs.FSWatcher | undefined;
    try {
      watcher = fs.watch(path.dirname(this.serverPath), { persistent: false }, () => {
        changed = true;
        wake?.();
      });
      watcher.on("error", () => watcher?.close());
    } catch {
      // Not there (yet): polling finds nrid.
    }
    try {
      for (;;) {
        if (stop.aborted) return false;
        if (await reachable(this.serverPath)) return !stop.aborted;
        if (changed) {
          changed = false;
          continue;
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, POLL_INTERVAL_MS);
          function done() {
            clearTimeout(t);
            stop.removeEventListener("abort", done);
            wake = undefined;
            resolve();
          }
          wake = done;
          stop.addEventListener("abort", done);
        });
        changed = false;
      }
    } finally {
      watcher?.close();
    }
  }

  private registerRequest(s: Session): RegisterPluginRequest {
    s.statusGen = this.statusGen;
    return create(RegisterPluginRequestSchema, {
      pluginName: this.name,
      pluginIdx: this.index,
      nriVersion: NRI_VERSION,
      endpoint: this.endpoint,
      capabilities: this.capabilities,
      timeouts: this.timeouts,
      pluginVersion: this.pluginVersion,
      selectors: this.selectorList,
      status: this.st.status,
      statusReason: this.st.reason,
    });
  }

  /** One registration: RegisterPlugin, then reading the stream until it ends. */
  private async session(stop: AbortSignal): Promise<SessionResult> {
    try {
      const uid = fs.statSync(this.serverPath).uid;
      if (uid !== this.serverUid) {
        this.serverUid = uid;
        const me = process.geteuid?.() ?? 0;
        if (uid !== 0 && uid !== me && (this.socketMode & 0o077) === 0) {
          this.log.warn(
            `nrid's socket belongs to uid ${uid}, neither root nor this plugin's uid ${me}: nrid cannot connect to the endpoint (mode ${this.socketMode.toString(8)}); give the socket a group nrid is in`,
          );
        }
      }
    } catch {
      // nrid is not there (yet); RegisterPlugin fails with UNAVAILABLE.
    }
    const sm = new Http2SessionManager("http://localhost", {}, {
      createConnection: () => net.createConnection(this.serverPath),
    });
    const transport = createGrpcTransport({ baseUrl: "http://localhost", sessionManager: sm, readMaxBytes: DEFAULT_MAX_MESSAGE_SIZE });
    const s: Session = { sm, client: createClient(RuntimeService, transport), instance: "", statusGen: 0 };
    const ac = new AbortController();
    const onStop = () => ac.abort();
    stop.addEventListener("abort", onStop);
    this.pending = s;
    this.lastShutdown = undefined;
    this.sync = undefined;
    const res: SessionResult = { registered: false };
    try {
      const stream = s.client.registerPlugin(this.registerRequest(s), { signal: ac.signal });
      for await (const msg of stream) {
        if (!res.registered) {
          this.pending = undefined;
          if (msg.message.case !== "registered") {
            throw new ConnectError("the server's first message is not Registered", Code.Internal);
          }
          const reg = msg.message.value;
          if (reg.instanceId !== s.instance) {
            this.log.warn(`Registered names another instance (${reg.instanceId}) than Configure (${s.instance})`);
            s.instance = reg.instanceId;
            this.instance = reg.instanceId;
          }
          this.current = s;
          this.reg = reg;
          res.registered = true;
          this.notify();
          this.setHealth(ServingStatus.SERVING);
          this.log.info(
            `registered: instance ${reg.instanceId}, server ${reg.serverVersion}, runtime ${reg.runtimeName}, identity ${reg.identity}, events ${eventNames(reg.events).join(",")}, selectors ${reg.selectors.length}, status ${PluginStatus[this.st.status]}`,
          );
          if (this.statusGen !== s.statusGen) {
            // The status changed while the registration was pending: its
            // request carried an older one.
            this.sendStatus(s, reg.instanceId, this.st).catch((e) =>
              this.log.debug(`status ${PluginStatus[this.st.status]} not sent: ${String(e)}`),
            );
          }
        }
      }
    } catch (e) {
      if (!stop.aborted) res.err = ConnectError.from(e);
    } finally {
      stop.removeEventListener("abort", onStop);
      this.pending = undefined;
      this.end();
      res.shutdown = this.lastShutdown;
      if (res.registered) this.setHealth(ServingStatus.NOT_SERVING);
      sm.abort();
    }
    return res;
  }

  // ---------------------------------------------------------------- serve

  private async serve(): Promise<{ close(): Promise<void> }> {
    const max = (this.capabilities.maxMessageSize || DEFAULT_MAX_MESSAGE_SIZE) + (64 << 10);
    const adapter = connectNodeAdapter({
      grpc: true,
      grpcWeb: false,
      connect: false,
      readMaxBytes: max,
      writeMaxBytes: max,
      routes: (router) => this.routes(router),
    });
    const handler = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
      // The authority means nothing on a unix socket, and gRPC's C core
      // (Python grpcio, for example) sends the percent-encoded socket path,
      // from which connect-node fails to build a URL (and throws).
      Object.defineProperty(req, "authority", { value: "localhost" });
      try {
        adapter(req, res);
      } catch (e) {
        this.log.warn(`refused a malformed request: ${String(e)}`);
        res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      }
    };
    const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } }, handler);
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on("session", (s) => {
      sessions.add(s);
      s.on("close", () => sessions.delete(s));
    });
    this.setHealth(ServingStatus.NOT_SERVING);
    await this.bind(server);
    this.log.info(`serving on ${this.endpoint}, events ${eventNames(this.events).join(",")}`);
    return {
      close: () =>
        new Promise<void>((resolve) => {
          for (const w of this.healthWatchers) w();
          server.close(() => resolve());
          for (const s of sessions) s.destroy();
        }),
    };
  }

  /**
   * Binds the endpoint with its final mode, without a window where it is
   * more open: listen in a fresh 0700 directory next to it, chmod, rename
   * into place. A stale socket file is removed; a live one is an error.
   */
  private async bind(server: http2.Http2Server): Promise<void> {
    const p = this.endpointPath;
    const dir = path.dirname(p);
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(p);
    } catch {
      st = undefined;
    }
    if (st) {
      if (!st.isSocket()) throw new Error(`${p} exists and is not a socket`);
      const live = await new Promise<boolean>((resolve) => {
        const c = net.createConnection(p);
        c.on("connect", () => {
          c.destroy();
          resolve(true);
        });
        c.on("error", () => resolve(false));
      });
      if (live) throw new Error(`${p} is in use by another process`);
      fs.unlinkSync(p);
    }
    const tmp = fs.mkdtempSync(path.join(dir, ".n"));
    try {
      const tp = path.join(tmp, "s");
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(tp, () => {
          server.off("error", reject);
          resolve();
        });
      });
      fs.chmodSync(tp, this.socketMode);
      fs.renameSync(tp, p);
    } finally {
      try {
        fs.rmdirSync(tmp);
      } catch {
        // not empty: the rename failed, and the error says why
      }
    }
  }

  private removeEndpoint(): void {
    try {
      if (fs.lstatSync(this.endpointPath).isSocket()) fs.unlinkSync(this.endpointPath);
    } catch {
      // already gone
    }
  }

  private setHealth(status: number): void {
    this.health.set("", status);
    this.health.set(PLUGIN_SERVICE, status);
    for (const w of this.healthWatchers) w();
  }

  private routes(router: ConnectRouter): void {
    const ev =
      <M extends EventHandlerName>(name: M) =>
      (req: Parameters<NonNullable<Handlers[M]>>[0], hctx: HandlerContext) =>
        this.event(name, req as never, hctx);
    const impl: ServiceImpl<typeof PluginService> = {
      configure: (req, hctx) => this.configure(req, hctx),
      synchronize: (req, hctx) => this.synchronize(req, hctx),
      shutdown: (req, hctx) => this.shutdownCall(req, hctx),
      runPodSandbox: ev("runPodSandbox"),
      updatePodSandbox: ev("updatePodSandbox"),
      postUpdatePodSandbox: ev("postUpdatePodSandbox"),
      stopPodSandbox: ev("stopPodSandbox"),
      removePodSandbox: ev("removePodSandbox"),
      createContainer: ev("createContainer"),
      postCreateContainer: ev("postCreateContainer"),
      startContainer: ev("startContainer"),
      postStartContainer: ev("postStartContainer"),
      updateContainer: ev("updateContainer"),
      postUpdateContainer: ev("postUpdateContainer"),
      stopContainer: ev("stopContainer"),
      removeContainer: ev("removeContainer"),
      validateContainerAdjustment: ev("validateContainerAdjustment"),
    };
    router.service(PluginService, impl);
    const status = (service: string) => {
      const st = this.health.get(service);
      if (st === undefined) throw new ConnectError(`unknown service ${service}`, Code.NotFound);
      return create(HealthCheckResponseSchema, { status: st } as never);
    };
    const plugin = this;
    router.service(HealthService, {
      check: (req: { service: string }) => status(req.service),
      async *watch(req: { service: string }, hctx: HandlerContext) {
        let last = -1;
        while (!hctx.signal.aborted) {
          const st = plugin.health.get(req.service) ?? ServingStatus.SERVICE_UNKNOWN;
          if (st !== last) {
            last = st;
            yield create(HealthCheckResponseSchema, { status: st } as never);
          }
          await new Promise<void>((resolve) => {
            const w = () => {
              plugin.healthWatchers.delete(w);
              resolve();
            };
            plugin.healthWatchers.add(w);
            hctx.signal.addEventListener("abort", w, { once: true });
          });
        }
        throw ConnectError.from(hctx.signal.reason);
      },
    } as never);
    // Reflection, with the proto comments: grpcurl lists, describes and
    // calls the plugin without a protoset.
    addReflection(router, [PLUGIN_SERVICE, HealthService.typeName]);
  }

  private context(hctx: HandlerContext, instanceId?: string): CallContext {
    const h = hctx.requestHeader;
    return {
      instanceId: instanceId ?? h.get(METADATA_INSTANCE_ID) ?? "",
      nodeName: h.get("nri-node-name") ?? "",
      runtimeName: h.get("nri-runtime-name") ?? "",
      requestHeader: h,
      signal: hctx.signal,
      timeRemainingMs: () => hctx.timeoutMs(),
      plugin: this,
    };
  }

  private checkInstance(ctx: CallContext): void {
    const cur = this.instance;
    if (!cur) {
      throw new ConnectError(`plugin ${this.fullName} is not registered; the call names instance "${ctx.instanceId}"`, Code.Unavailable);
    }
    if (ctx.instanceId !== cur) {
      throw new ConnectError(
        `plugin ${this.fullName}: the call names instance "${ctx.instanceId}", the current instance is "${cur}"`,
        Code.Unavailable,
      );
    }
  }

  private fail(e: unknown, what: string): ConnectError {
    const err = toConnectError(e);
    if (e instanceof ConnectError) this.log.debug(`${what} failed: ${err.message}`);
    else this.log.warn(`${what} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return err;
  }

  private async configure(req: ConfigureRequest, hctx: HandlerContext): Promise<ConfigureResponse> {
    const id = req.instanceId || (hctx.requestHeader.get(METADATA_INSTANCE_ID) ?? "");
    const p = this.pending;
    if (!p) {
      throw new ConnectError(`plugin ${this.fullName} has no registration pending; Configure for instance "${id}" refused`, Code.Unavailable);
    }
    p.instance = id;
    this.instance = id;
    this.sync = undefined;
    this.log.debug(`configuring instance ${id}: runtime ${req.runtimeName} ${req.runtimeVersion}, node ${req.nodeName}, server ${req.serverVersion}`);
    let events = this.events;
    let policy = this.failurePolicy;
    if (this.h.configure) {
      let rsp;
      try {
        rsp = await this.h.configure(req, this.context(hctx, id));
      } catch (e) {
        throw this.fail(e, "Configure");
      }
      if (rsp) {
        const out = create(ConfigureResponseSchema, rsp);
        if (out.events) {
          const extra = out.events & ~this.events;
          if (extra) {
            throw new ConnectError(`Configure subscribed to events the plugin does not handle: ${eventNames(extra).join(",")}`, Code.FailedPrecondition);
          }
          events = out.events;
        }
        if (out.failurePolicy) policy = out.failurePolicy;
      }
    }
    return create(ConfigureResponseSchema, { events, failurePolicy: policy });
  }

  private async synchronize(req: SynchronizeRequest, hctx: HandlerContext): Promise<SynchronizeResponse> {
    const ctx = this.context(hctx);
    this.checkInstance(ctx);
    const epoch = req.epoch > 1n ? req.epoch : 1n;
    let acc = this.sync;
    if (!acc || acc.instance !== this.instance || acc.epoch !== epoch) {
      acc = { instance: this.instance, epoch, pods: [], containers: [] };
      this.sync = acc;
    }
    acc.pods.push(...req.pods);
    acc.containers.push(...req.containers);
    if (req.more) return create(SynchronizeResponseSchema, { more: true });
    this.sync = undefined;
    const full = create(SynchronizeRequestSchema, { pods: acc.pods, containers: acc.containers, epoch, reason: req.reason });
    const h = epoch > 1n && this.h.resync ? this.h.resync.bind(this.h) : this.h.synchronize?.bind(this.h);
    this.log.debug(`synchronizing epoch ${epoch} (${SyncReason[req.reason]}): ${full.pods.length} pods, ${full.containers.length} containers`);
    if (!h) return create(SynchronizeResponseSchema);
    let rsp;
    try {
      rsp = await h(full, ctx);
    } catch (e) {
      throw this.fail(e, `Synchronize (epoch ${epoch})`);
    }
    const out = create(SynchronizeResponseSchema, rsp ?? {});
    out.more = false;
    return out;
  }

  private async shutdownCall(req: ShutdownRequest, hctx: HandlerContext) {
    const ctx = this.context(hctx);
    this.checkInstance(ctx);
    this.lastShutdown = req;
    this.log.info(`shutdown: ${ShutdownKind[req.kind]}: ${req.reason}`);
    if (this.h.shutdown) {
      try {
        await this.h.shutdown(req, ctx);
      } catch (e) {
        this.log.warn(`shutdown handler failed: ${String(e)}`);
      }
    }
    return create(ShutdownResponseSchema);
  }

  private async event(name: EventHandlerName, req: never, hctx: HandlerContext): Promise<never> {
    const ctx = this.context(hctx);
    this.checkInstance(ctx);
    const h = this.h[name] as ((req: unknown, ctx: CallContext) => unknown) | undefined;
    if (!h) throw new ConnectError(`plugin ${this.fullName} does not handle ${name}`, Code.Unimplemented);
    if (name === "validateContainerAdjustment") {
      try {
        return ((await h.call(this.h, req, ctx)) ?? {}) as never;
      } catch (e) {
        // The call ended (its deadline passed, or nrid cancelled it): its
        // own end is the answer, not a rejection. A timed-out validator
        // answering "reject" first (connect's timer firing before nrid's on
        // a loaded machine) would be taken for a verdict, not a timeout.
        if (hctx.signal.aborted) throw ConnectError.from(hctx.signal.reason);
        const reason = e instanceof ConnectError ? e.rawMessage : e instanceof Error ? e.message || e.name : String(e);
        this.log.debug(`rejecting container adjustment: ${reason}`);
        return { reject: true, reason } as never;
      }
    }
    try {
      return ((await h.call(this.h, req, ctx)) ?? {}) as never;
    } catch (e) {
      throw this.fail(e, name);
    }
  }
}

/**
 * Runs plugin until SIGINT or SIGTERM (which stop it gracefully) and
 * resolves with its result: the main of a plugin program. On
 * RegistrationRefusedError it sets process.exitCode to 1 and rethrows.
 */
export async function run(plugin: Plugin): Promise<RunResult> {
  const stop = () => plugin.stop();
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    return await plugin.run();
  } catch (e) {
    process.exitCode = 1;
    throw e;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}
