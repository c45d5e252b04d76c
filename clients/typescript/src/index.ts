/**
 * @nri-grpc/plugin: the TypeScript SDK for nri-grpc plugins.
 *
 * nri-grpc is containerd's Node Resource Interface (NRI) as a gRPC service. A
 * plugin is an object with handlers for the events it wants; Plugin serves
 * PluginService on the plugin's unix socket (Connect's gRPC protocol over
 * Node's HTTP/2), registers with nrid, holds the registration session, checks
 * instance ids, re-registers when nrid restarts, collects Synchronize pages,
 * and handles resync and Shutdown (see docs/PROTOCOL.md):
 *
 *     import { Adjustment, Plugin, run } from "@nri-grpc/plugin";
 *
 *     await run(new Plugin({
 *       createContainer: (req) => new Adjustment().addEnv("HELLO", req.container?.name ?? "").response(),
 *     }, { name: "hello", index: "10" }));
 *
 * The generated messages are under "@nri-grpc/plugin/gen/<file>_pb" (for
 * example "@nri-grpc/plugin/gen/types_pb"); the most used are re-exported
 * here. docs/typescript-plugin.md is the tutorial.
 *
 * @module
 */

export { Adjustment, Update, evict, isMarkedForRemoval, markForRemoval, type Int } from "./adjust.js";
export { ALL_EVENTS, EVENTS, eventMask, eventName, eventNames, handlerName, maskEvents, type EventHandlerName } from "./events.js";
export { NotRegisteredError, RegistrationRefusedError } from "./errors.js";
export {
  DEFAULT_SERVER_ADDRESS,
  DEFAULT_SOCKET_DIR,
  ENV_PLUGIN_ENDPOINT,
  ENV_PLUGIN_IDX,
  ENV_PLUGIN_NAME,
  ENV_SERVER_ADDRESS,
  METADATA_INSTANCE_ID,
  Plugin,
  checkIndex,
  checkName,
  errorInfo,
  parseName,
  run,
  socketPath,
  type CallContext,
  type Handlers,
  type Logger,
  type PluginOptions,
  type RunResult,
  type Timeouts,
} from "./plugin.js";
export { NRI_VERSION, PROTOCOL, VERSION } from "./version.js";
export {
  MAX_POD_LABELS_BYTES,
  MAX_REASON_BYTES,
  MAX_SELECTORS,
  MAX_SELECTOR_ENTRIES,
  MAX_SELECTOR_ENTRY_BYTES,
  checkSelectors,
  type EventSelectorInit,
  type StatusInit,
} from "./selectors.js";
export { REFLECTION_SERVICES } from "./reflection.js";
export { Code, ConnectError } from "@connectrpc/connect";
export { create } from "@bufbuild/protobuf";
export * from "./gen/nri/v1beta1/types_pb.js";
export * from "./gen/nri/v1beta1/plugin_service_pb.js";
export * from "./gen/nri/v1beta1/runtime_service_pb.js";
