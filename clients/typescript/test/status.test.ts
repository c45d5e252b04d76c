// Selectors, status and resync: what the SDK sends, against a small fake
// RuntimeService that records every request and its metadata (end-to-end
// tests against nrid are in selectors-e2e.test.ts).

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http2 from "node:http2";
import * as path from "node:path";
import { test } from "node:test";

import { create } from "@bufbuild/protobuf";
import { type ConnectRouter, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import {
  type EventSelectorInit,
  NotRegisteredError,
  Plugin,
  PluginStatus,
  type RegisterPluginRequest,
  RegisterPluginResponseSchema,
  RuntimeService,
  checkSelectors,
} from "@nri-grpc/plugin";
import { WAIT_MS, waitFor } from "./harness.js";

/** RuntimeService that registers every plugin at once (no Configure, no
 * Synchronize: the SDK takes the instance id of Registered), records
 * requests with their nri-instance-id, and ends a registration when told. */
class FakeRuntime {
  readonly registrations: RegisterPluginRequest[] = [];
  readonly statuses: [string, PluginStatus, string][] = [];
  readonly resyncs: [string, string][] = [];
  /** Registered is held back until release() when held. */
  held = false;
  private releaseFns: (() => void)[] = [];
  private ends = new Map<string, () => void>();

  release(): void {
    this.held = false;
    for (const f of this.releaseFns.splice(0)) f();
  }

  end(instance: string): void {
    this.ends.get(instance)?.();
  }

  routes(router: ConnectRouter): void {
    const fake = this;
    const impl: Partial<ServiceImpl<typeof RuntimeService>> = {
      async *registerPlugin(req: RegisterPluginRequest, ctx: HandlerContext) {
        fake.registrations.push(req);
        const inst = `inst-${fake.registrations.length}`;
        const ended = new Promise<void>((r) => fake.ends.set(inst, r));
        if (fake.held) await new Promise<void>((r) => fake.releaseFns.push(r));
        yield create(RegisterPluginResponseSchema, {
          message: { case: "registered", value: { instanceId: inst, events: 0x3fff, selectors: req.selectors } },
        });
        await Promise.race([ended, new Promise((r) => ctx.signal.addEventListener("abort", r))]);
      },
      setPluginStatus(req, ctx) {
        fake.statuses.push([ctx.requestHeader.get("nri-instance-id") ?? "", req.status, req.reason]);
        return {};
      },
      requestResync(req, ctx) {
        fake.resyncs.push([ctx.requestHeader.get("nri-instance-id") ?? "", req.reason]);
        return { epoch: BigInt(6 + fake.resyncs.length) };
      },
    };
    router.service(RuntimeService, impl);
  }
}

async function withFake(fn: (f: FakeRuntime, dir: string, sock: string) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync("/tmp/nri-");
  const sock = path.join(dir, "rt.sock");
  const fake = new FakeRuntime();
  const server = http2.createServer(connectNodeAdapter({ grpc: true, grpcWeb: false, connect: false, routes: (r) => fake.routes(r) }));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((r) => server.listen(sock, r));
  try {
    await fn(fake, dir, sock);
  } finally {
    await new Promise<void>((r) => {
      server.close(() => r());
      for (const s of sessions) s.destroy();
    });
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function plugin(dir: string, sock: string, options: ConstructorParameters<typeof Plugin>[1] = {}): Plugin {
  return new Plugin(
    { createContainer: () => undefined },
    { name: "st", index: "10", serverAddress: sock, socketDir: path.join(dir, "plugins"), backoffMs: [50, 500], logger: quiet, ...options },
  );
}

const SELECTORS: EventSelectorInit[] = [
  { namespaces: ["prod", "staging"], podLabels: "app=web,!canary" },
  { containerNames: ["db-*"], runtimeHandlers: ["", "kata"] },
];

const sels = (xs: readonly { namespaces: string[]; podLabels: string; containerNames: string[]; runtimeHandlers: string[] }[]) =>
  xs.map((s) => [s.namespaces, s.podLabels, s.containerNames, s.runtimeHandlers]);

test("registration carries selectors and status; reports go to the current instance", () =>
  withFake(async (fake, dir, sock) => {
    const p = plugin(dir, sock, { selectors: SELECTORS, status: PluginStatus.NOT_READY, statusReason: "warming up" });
    const run = p.run();
    try {
      const reg = await p.waitRegistered(WAIT_MS);
      const req = fake.registrations[0];
      const want = sels(checkSelectors(SELECTORS));
      assert.deepEqual(sels(req.selectors), want);
      assert.deepEqual([req.status, req.statusReason], [PluginStatus.NOT_READY, "warming up"]);
      assert.deepEqual(sels(reg.selectors), want);
      assert.deepEqual(sels(p.selectors), want);

      await p.setStatus(PluginStatus.READY, "warm");
      assert.equal(await p.requestResync("cache lost"), 7n);
      await p.setStatus("DEGRADED", "db slow");
      await p.setStatus("NOT_READY", "db down");
      assert.deepEqual(fake.statuses, [
        ["inst-1", PluginStatus.READY, "warm"],
        ["inst-1", PluginStatus.DEGRADED, "db slow"],
        ["inst-1", PluginStatus.NOT_READY, "db down"],
      ]);
      assert.deepEqual(fake.resyncs, [["inst-1", "cache lost"]]);
      assert.deepEqual(p.status, { status: PluginStatus.NOT_READY, reason: "db down" });

      // nrid ends the registration (a restart): the plugin registers again
      // with the last status it reported, and its selectors.
      fake.end("inst-1");
      await waitFor(() => p.registered?.instanceId === "inst-2", "the second registration");
      const again = fake.registrations[1];
      assert.deepEqual([again.status, again.statusReason], [PluginStatus.NOT_READY, "db down"]);
      assert.deepEqual(sels(again.selectors), want);
      assert.equal(await p.requestResync(), 8n);
      assert.deepEqual(fake.resyncs.at(-1), ["inst-2", ""]);
      assert.equal(fake.statuses.length, 3); // nothing to catch up: the request carried it
    } finally {
      p.stop();
      await run;
    }
  }));

test("a status set while registering is sent once registered", () =>
  withFake(async (fake, dir, sock) => {
    fake.held = true;
    const p = plugin(dir, sock);
    const run = p.run();
    try {
      await waitFor(() => fake.registrations.length > 0, "the registration request");
      assert.equal(fake.registrations[0].status, PluginStatus.READY);
      // Registering (nrid has not answered): no error, sent once registered.
      await p.setStatus(PluginStatus.NOT_READY, "lost my backend");
      assert.deepEqual(fake.statuses, []);
      fake.release();
      await p.waitRegistered(WAIT_MS);
      await waitFor(() => fake.statuses.length > 0, "the status sent after registering");
      assert.deepEqual(fake.statuses, [["inst-1", PluginStatus.NOT_READY, "lost my backend"]]);
    } finally {
      p.stop();
      await run;
    }
  }));

test("not registered and invalid input", () =>
  withFake(async (fake, dir, sock) => {
    const p = plugin(dir, sock);
    assert.deepEqual(p.status, { status: PluginStatus.READY, reason: "" });
    await assert.rejects(p.requestResync("x"), NotRegisteredError);
    await assert.rejects(p.setStatus(PluginStatus.DEGRADED, "half"), (e: Error) => {
      assert.ok(e instanceof NotRegisteredError);
      assert.match(e.message, /DEGRADED is sent with the next registration/);
      return true;
    });
    assert.deepEqual(p.status, { status: PluginStatus.DEGRADED, reason: "half" }); // kept for the next registration
    for (const bad of [9, -1, "BUSY", true, 1.5]) {
      await assert.rejects(p.setStatus(bad as never), /status/);
    }
    await assert.rejects(p.setStatus(PluginStatus.READY, "x".repeat(1025)), /reason: 1025 bytes, at most 1024/);
    await assert.rejects(p.requestResync("\udcff"), /reason is not valid UTF-8/);
    assert.deepEqual(p.status, { status: PluginStatus.DEGRADED, reason: "half" }); // refused input changes nothing
    assert.deepEqual([fake.statuses, fake.resyncs], [[], []]);
    assert.deepEqual(plugin(dir, sock, { status: PluginStatus.UNSPECIFIED }).status, { status: PluginStatus.READY, reason: "" });
    assert.throws(() => plugin(dir, sock, { statusReason: "é".repeat(513) }), /statusReason: 1026 bytes/);
  }));

test("selector bounds", () => {
  assert.deepEqual(checkSelectors([]), []);
  assert.throws(() => checkSelectors(Array(17).fill({})), /selectors: 17 selectors, at most 16/);
  assert.equal(checkSelectors(Array(16).fill({})).length, 16);
  assert.throws(() => checkSelectors([{ namespaces: Array.from({ length: 65 }, (_, i) => `${i}`) }]), /selectors\[0\]\.namespaces: 65 entries, at most 64/);
  assert.throws(() => checkSelectors([{}, { containerNames: ["ok", "x".repeat(254)] }]), /selectors\[1\]\.containerNames\[1\]: 254 bytes, at most 253/);
  assert.throws(() => checkSelectors([{ podLabels: "a".repeat(4097) }]), /selectors\[0\]\.podLabels: 4097 bytes, at most 4096/);
  assert.throws(() => checkSelectors([{ runtimeHandlers: ["\ud800"] }]), /runtimeHandlers\[0\] is not valid UTF-8/);
  assert.throws(() => checkSelectors([{ namespaces: "prod" as never }]), /namespaces must be an array/);
  assert.ok(checkSelectors([{ namespaces: ["😀"] }])); // a surrogate pair is fine
  assert.throws(() => new Plugin({ createContainer: () => undefined }, { name: "x", index: "10", selectors: Array(17).fill({}) }), /17 selectors/);
});
