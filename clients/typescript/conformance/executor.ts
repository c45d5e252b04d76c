// The conformance executor of the TypeScript SDK (docs/CONFORMANCE.md): a
// plugin built with Plugin that answers every call it receives with the
// answer of the conformance harness's driver, so that the scenario catalog
// of test/conformance runs through the SDK (`make sdk-conformance`). It
// registers as NRI_CONFORMANCE_REGISTRATION says and forwards every call to
// the PluginService at NRI_CONFORMANCE_DRIVER.

import * as net from "node:net";
import * as readline from "node:readline";

import { fromJsonString } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import {
  Code,
  ConnectError,
  EVENTS,
  handlerName,
  METADATA_INSTANCE_ID,
  Plugin,
  RegistrationRefusedError,
  RegisterPluginRequestSchema,
  run,
  type CallContext,
  type Event,
  type Handlers,
  type StatusInit,
  type Timeouts,
} from "@nri-grpc/plugin";
import { PluginService } from "@nri-grpc/plugin/gen/plugin_service_pb";

const MAX_MESSAGE = 16 << 20;

function ms(d: Duration | undefined): number | undefined {
  return d === undefined ? undefined : Number(d.seconds) * 1000 + d.nanos / 1e6;
}

function main(): Promise<number> {
  const driver = process.env.NRI_CONFORMANCE_DRIVER;
  if (!driver) {
    console.error("NRI_CONFORMANCE_DRIVER is not set");
    return Promise.resolve(2);
  }
  const reg = fromJsonString(RegisterPluginRequestSchema, process.env.NRI_CONFORMANCE_REGISTRATION || "{}");
  const sm = new Http2SessionManager("http://localhost", {}, { createConnection: () => net.createConnection(driver) });
  const transport = createGrpcTransport({ baseUrl: "http://localhost", sessionManager: sm, readMaxBytes: MAX_MESSAGE });
  const d = createClient(PluginService, transport) as unknown as Record<string, (req: unknown, opts: object) => Promise<unknown>>;

  // forward calls the same method of the driver within the call's remaining
  // time, cancelled with the call, with its instance id; the driver's error
  // becomes the same status. When the driver did not answer in time,
  // neither does the executor: the call runs out at its own deadline.
  const forward = async (method: string, req: unknown, ctx: CallContext, instanceId = ctx.instanceId): Promise<unknown> => {
    const left = ctx.timeRemainingMs();
    // grpc-timeout travels in whole milliseconds: round down, never later.
    const timeoutMs = left === undefined ? undefined : Math.max(Math.floor(left) - 1, 1);
    const until = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    try {
      return await d[method](req, { signal: ctx.signal, timeoutMs, headers: { [METADATA_INSTANCE_ID]: instanceId } });
    } catch (e) {
      const err = ConnectError.from(e);
      if (until !== undefined && Date.now() >= until && (err.code === Code.DeadlineExceeded || err.code === Code.Canceled)) {
        if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
        // The call ended: answer with its own end (DEADLINE_EXCEEDED when
        // the SDK's timer for the call's grpc-timeout fired), not with the
        // driver's error. The driver's CANCELLED reaching nrid before its
        // own timer fired (a loaded machine) would be taken for a plugin
        // that gave up, not one that timed out.
        throw ConnectError.from(ctx.signal.reason);
      }
      throw new ConnectError(err.rawMessage, err.code);
    }
  };

  const handlers: Record<string, unknown> = {
    configure: (req: { instanceId: string }, ctx: CallContext) => forward("configure", req, ctx, req.instanceId || ctx.instanceId),
    synchronize: (req: unknown, ctx: CallContext) => forward("synchronize", req, ctx),
    shutdown: async (req: unknown, ctx: CallContext) => {
      await forward("shutdown", req, ctx);
    },
  };
  for (const ev of EVENTS) {
    const name = handlerName(ev);
    handlers[name] = (req: unknown, ctx: CallContext) => forward(name, req, ctx);
  }

  const t = reg.timeouts;
  let timeouts: Timeouts | undefined;
  if (t) {
    const eventsMs: Partial<Record<Event, number>> = {};
    for (const et of t.events) eventsMs[et.event] = ms(et.timeout);
    timeouts = { requestMs: ms(t.request), synchronizeMs: ms(t.synchronize), eventsMs };
  }
  const c = reg.capabilities;
  const plugin = new Plugin(handlers as Handlers, {
    name: reg.pluginName,
    index: reg.pluginIdx,
    maxConcurrentCalls: c?.maxConcurrentCalls,
    maxMessageSize: c?.maxMessageSize,
    dryRun: c?.dryRun,
    resync: c?.resync,
    timeouts,
    selectors: reg.selectors,
    status: reg.status,
    statusReason: reg.statusReason,
  });
  commands(plugin);
  return run(plugin).then(
    () => 0,
    (e: unknown) => {
      console.error(e instanceof RegistrationRefusedError ? e.message : e);
      return 1;
    },
  );
}

// Runs the harness's commands (docs/CONFORMANCE.md, "Commands"): one per
// line of standard input, each made through the SDK's own API and answered
// with one line on standard output.
function commands(plugin: Plugin): void {
  const command = async (f: string[]): Promise<string> => {
    // Once the SDK holds its registration: the harness sends a command
    // after the server answered, which the SDK may not have read yet.
    await plugin.waitRegistered();
    if (f.length === 4 && f[1] === "set_status") {
      // The SDK checks the name ("READY", "NOT_READY", "DEGRADED").
      await plugin.setStatus(f[2].replace(/^PLUGIN_STATUS_/, "") as StatusInit, f[3]);
      return "";
    }
    if (f.length === 3 && f[1] === "request_resync") return String(await plugin.requestResync(f[2]));
    throw new Error(`unknown command ${JSON.stringify(f.slice(1).join(" "))}`);
  };
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    const f = line.split("\t");
    command(f).then(
      (v) => process.stdout.write(`nri-conformance-reply\t${f[0]}\tok\t${v}\n`),
      (e: unknown) => {
        const msg = (e instanceof Error ? e.message : String(e)).replace(/\n/g, " ");
        process.stdout.write(`nri-conformance-reply\t${f[0]}\terror\t${msg}\n`);
      },
    );
  });
}

main().then((code) => process.exit(code));
