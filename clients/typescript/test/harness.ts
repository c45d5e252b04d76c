// Test harness: a real nrid process, a runtime driving it through
// AdaptationService, and recording plugins of the SDK. Nothing here sleeps to
// wait: waits poll a condition and fail after a generous bound (WAIT_MS).

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { Code, ConnectError, Plugin, errorInfo, type Handlers, type PluginOptions, type RunResult } from "@nri-grpc/plugin";
import {
  AdaptationService,
  type AttachRequest,
  type ApplyUpdates,
  AttachRequestSchema,
} from "@nri-grpc/plugin/gen/adaptation_service_pb";
import { AdminService } from "@nri-grpc/plugin/gen/admin_service_pb";
import { type Container, ContainerSchema, type PodSandbox, PodSandboxSchema } from "@nri-grpc/plugin/gen/types_pb";

/** Bound of every wait. Generous: the machine is shared. */
export const WAIT_MS = 30_000;

const here = path.dirname(fileURLToPath(import.meta.url));
/** clients/typescript (dist-test/test/.. /..). */
export const PKG_DIR = path.resolve(here, "..", "..");
const ROOT = path.resolve(PKG_DIR, "..", "..");

/** The nrid binary: $NRID (make ts-test builds it), else built here with go build. */
export function nridBinary(): string {
  if (process.env.NRID) return process.env.NRID;
  const out = path.join(os.tmpdir(), `nri-tstest-nrid-${process.getuid?.() ?? 0}`);
  execFileSync("go", ["build", "-o", out, "./cmd/nrid"], { cwd: ROOT, stdio: "inherit" });
  return out;
}

/** Polls cond until it returns a truthy value. */
export async function waitFor<T>(cond: () => T | Promise<T>, what: string, timeoutMs = WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A running nrid in a short temporary directory (socket paths are limited to 107 bytes). */
export class Nrid {
  readonly dir: string;
  readonly sock: string;
  readonly plugins: string;
  readonly logPath: string;
  private proc?: ChildProcess;

  constructor(
    readonly binary: string,
    readonly config = "",
  ) {
    this.dir = fs.mkdtempSync("/tmp/nri-");
    fs.chmodSync(this.dir, 0o755);
    this.sock = path.join(this.dir, "nrid.sock");
    this.plugins = path.join(this.dir, "plugins");
    this.logPath = path.join(this.dir, "nrid.log");
  }

  log(): string {
    try {
      return fs.readFileSync(this.logPath, "utf8");
    } catch {
      return "";
    }
  }

  async start(): Promise<this> {
    const args = ["--socket", this.sock, "--plugin-socket-dir", this.plugins, "--log-level", "debug"];
    if (this.config) {
      const p = path.join(this.dir, "nrid.toml");
      fs.writeFileSync(p, this.config);
      args.push("--config", p);
    }
    const before = this.log().length;
    const fd = fs.openSync(this.logPath, "a");
    this.proc = spawn(this.binary, args, { stdio: ["ignore", fd, fd] });
    fs.closeSync(fd);
    let exited: number | null = null;
    this.proc.on("exit", (code) => (exited = code ?? -1));
    await waitFor(() => {
      if (exited !== null) throw new Error(`nrid exited with ${exited}:\n${this.log()}`);
      return /msg=serving/.test(this.log().slice(before));
    }, "nrid to serve");
    return this;
  }

  /** Stops nrid gracefully (SIGTERM) and waits for it. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const done = new Promise<void>((r) => p.once("exit", () => r()));
    p.kill("SIGTERM");
    await done;
    this.proc = undefined;
  }

  /** Kills nrid (SIGKILL) and waits for it: no Shutdown, connections break,
   * and the socket file stays behind, refusing connections. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const done = new Promise<void>((r) => p.once("exit", () => r()));
    p.kill("SIGKILL");
    await done;
    this.proc = undefined;
  }

  async cleanup(): Promise<void> {
    if (this.proc && this.proc.exitCode === null) {
      const done = new Promise<void>((r) => this.proc!.once("exit", () => r()));
      this.proc.kill("SIGKILL");
      await done;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs fn with a started nrid, printing its log when fn fails. */
export async function withNrid(config: string, fn: (n: Nrid) => Promise<void>): Promise<void> {
  const n = new Nrid(nridBinary(), config);
  try {
    await n.start();
    await fn(n);
  } catch (e) {
    process.stderr.write(`nrid log:\n${n.log()}\n`);
    throw e;
  } finally {
    await n.cleanup();
  }
}

/** The runtime's side: AdaptationService calls and an Attach stream. */
export class Runtime {
  readonly sm: Http2SessionManager;
  readonly adapt: Client<typeof AdaptationService>;
  readonly admin: Client<typeof AdminService>;
  readonly applied: ApplyUpdates[] = [];
  /** Report every ApplyUpdates as failed. */
  failUpdates = false;
  private attachAbort?: AbortController;
  private attachDone?: Promise<void>;

  constructor(nrid: Nrid) {
    this.sm = new Http2SessionManager("http://localhost", {}, { createConnection: () => net.createConnection(nrid.sock) });
    const t = createGrpcTransport({ baseUrl: "http://localhost", sessionManager: this.sm });
    this.adapt = createClient(AdaptationService, t);
    this.admin = createClient(AdminService, t);
  }

  /**
   * Attaches as the runtime with this state; answers snapshot requests and
   * updates until detach. Returns once nrid holds the state (its cached pods
   * and containers are these), so plugins registering afterwards see it.
   */
  async attach(pods: PodSandbox[] = [], containers: Container[] = []): Promise<void> {
    // nrid may not have noticed a previous detach yet: ALREADY_EXISTS.
    await waitFor(async () => {
      try {
        await this.attachOnce(pods, containers);
        return true;
      } catch (e) {
        if (ConnectError.from(e).code === Code.AlreadyExists) return false;
        throw e;
      }
    }, "the previous runtime to detach");
    const want = (xs: { id: string }[]) => xs.map((x) => x.id).sort().join(",");
    await waitFor(async () => {
      const got = { pods: [] as string[], ctrs: [] as string[] };
      for await (const page of this.admin.getState({}, { timeoutMs: WAIT_MS })) {
        got.pods.push(...page.pods.map((p) => p.id));
        got.ctrs.push(...page.containers.map((c) => c.id));
      }
      return got.pods.sort().join(",") === want(pods) && got.ctrs.sort().join(",") === want(containers);
    }, "nrid to take the runtime's state");
  }

  private async attachOnce(pods: PodSandbox[], containers: Container[]): Promise<void> {
    const queue: (AttachRequest | null)[] = [create(AttachRequestSchema, { message: { case: "hello", value: { runtimeName: "test-runtime", runtimeVersion: "1.0" } } })];
    let wake: (() => void) | undefined;
    const push = (m: AttachRequest | null) => {
      queue.push(m);
      wake?.();
    };
    async function* requests() {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((r) => (wake = r));
        const m = queue.shift()!;
        if (m === null) return;
        yield m;
      }
    }
    const ac = new AbortController();
    this.attachAbort = ac;
    const stream = this.adapt.attach(requests(), { signal: ac.signal })[Symbol.asyncIterator]();
    const first = await stream.next();
    if (first.done || first.value.message.case !== "attached") throw new Error("Attach: no Attached");
    this.attachDone = (async () => {
      try {
        for (;;) {
          const r = await stream.next();
          if (r.done) return;
          const m = r.value.message;
          if (m.case === "snapshotRequest") {
            push(create(AttachRequestSchema, { message: { case: "snapshot", value: { requestId: m.value.requestId, pods, containers } } }));
          } else if (m.case === "applyUpdates") {
            this.applied.push(m.value);
            const res = { requestId: m.value.requestId, failed: this.failUpdates ? m.value.update : [], failedEvictions: this.failUpdates ? m.value.evict : [] };
            push(create(AttachRequestSchema, { message: { case: "updateResult", value: res } }));
          }
        }
      } catch {
        // detached
      }
    })();
  }

  async detach(): Promise<void> {
    this.attachAbort?.abort();
    await this.attachDone;
    this.attachAbort = undefined;
    this.attachDone = undefined;
  }

  async listPlugins() {
    return (await this.admin.listPlugins({}, { timeoutMs: WAIT_MS })).plugins;
  }

  async close(): Promise<void> {
    await this.detach();
    this.sm.abort();
  }
}

export function pod(id = "pod0", init: MessageInitShape<typeof PodSandboxSchema> = {}): PodSandbox {
  return create(PodSandboxSchema, { id, name: id + "-name", uid: id + "-uid", namespace: "default", ...(init as object) });
}

export function ctr(id = "ctr0", podId = "pod0", init: MessageInitShape<typeof ContainerSchema> = {}): Container {
  return create(ContainerSchema, { id, podSandboxId: podId, name: id + "-name", ...(init as object) });
}

/** The ErrorInfo reason of a rejected call. */
export async function rejection(p: Promise<unknown>): Promise<{ err: ConnectError; reason: string; plugins: string }> {
  try {
    await p;
  } catch (e) {
    const err = ConnectError.from(e);
    const info = errorInfo(err);
    return { err, reason: info?.reason ?? "", plugins: info?.metadata.plugins ?? "" };
  }
  throw new Error("the call succeeded");
}

type Behave = Record<string, (req: any, ctx: any) => unknown>;

/** In-process SDK plugins of one test: each call is recorded as "NN-name:Method" in a shared log. */
export class Plugins {
  readonly log: string[] = [];
  readonly requests = new Map<string, Map<string, any[]>>();
  readonly plugins = new Map<string, Plugin>();
  readonly runs = new Map<string, Promise<RunResult>>();

  constructor(readonly nrid: Nrid) {}

  start(
    idx: string,
    name: string,
    o: { events?: string[]; behave?: Behave; key?: string; withResync?: boolean; options?: PluginOptions } = {},
  ): Plugin {
    const full = `${idx}-${name}`;
    const key = o.key ?? full;
    const reqs = new Map<string, any[]>();
    this.requests.set(key, reqs);
    const handler = (method: string) => async (req: any, ctx: any) => {
      this.log.push(`${full}:${method}`);
      if (!reqs.has(method)) reqs.set(method, []);
      reqs.get(method)!.push(req);
      const f = o.behave?.[method];
      return f ? await f(req, ctx) : undefined;
    };
    const h: Record<string, unknown> = {
      configure: handler("Configure"),
      synchronize: handler("Synchronize"),
      shutdown: handler("Shutdown"),
    };
    if (o.withResync) h.resync = handler("Resync");
    for (const m of o.events ?? []) h[m[0].toLowerCase() + m.slice(1)] = handler(m);
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const p = new Plugin(h as Handlers, {
      name,
      index: idx,
      serverAddress: this.nrid.sock,
      socketDir: this.nrid.plugins,
      backoffMs: [50, 500],
      logger: process.env.NRI_GRPC_DEBUG ? undefined : quiet,
      ...o.options,
    });
    this.plugins.set(key, p);
    const run = p.run();
    run.catch(() => {});
    this.runs.set(key, run);
    return p;
  }

  async startRegistered(idx: string, name: string, o: Parameters<Plugins["start"]>[2] = {}): Promise<Plugin> {
    const p = this.start(idx, name, o);
    const run = this.runs.get(o.key ?? `${idx}-${name}`)!;
    await Promise.race([
      p.waitRegistered(WAIT_MS),
      run.then((r) => {
        throw new Error(`plugin ${p.fullName} returned ${r} before registering`);
      }),
    ]);
    return p;
  }

  req(key: string, method: string): any[] {
    return this.requests.get(key)?.get(method) ?? [];
  }

  calls(...methods: string[]): string[] {
    return methods.length ? this.log.filter((e) => methods.includes(e.split(":")[1])) : [...this.log];
  }

  async stopAll(): Promise<void> {
    for (const p of this.plugins.values()) p.stop();
    await Promise.allSettled(this.runs.values());
  }
}

/** Starts a plugin program (a separate node process). */
export function spawnPlugin(script: string, ...args: string[]): ChildProcess {
  return spawn(process.execPath, [path.join(here, script), ...args], { stdio: ["ignore", "inherit", "inherit"] });
}
