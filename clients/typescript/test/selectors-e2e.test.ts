// Selectors, status and resync end to end: the SDK against a real nrid.

import assert from "node:assert/strict";
import { test } from "node:test";

import { type EventSelectorInit, PluginStatus, RegistrationRefusedError, SyncReason } from "@nri-grpc/plugin";
import { PluginState } from "@nri-grpc/plugin/gen/admin_service_pb";
import { Plugins, Runtime, WAIT_MS, pod, waitFor, withNrid } from "./harness.js";

type Sel = { namespaces: string[]; podLabels: string; containerNames: string[]; runtimeHandlers: string[] };
const sels = (xs: readonly Sel[]) => xs.map((s) => [s.namespaces, s.podLabels, s.containerNames, s.runtimeHandlers]);
const want = (xs: EventSelectorInit[]) =>
  xs.map((s) => [s.namespaces ?? [], s.podLabels ?? "", s.containerNames ?? [], s.runtimeHandlers ?? []]);

test("selectors filter events and are shown", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    const selectors: EventSelectorInit[] = [{ namespaces: ["prod"] }, { namespaces: ["staging"], podLabels: "app=web,!canary" }];
    try {
      const p = await ps.startRegistered("10", "sel", { events: ["RunPodSandbox"], options: { selectors } });
      await ps.startRegistered("20", "all", { events: ["RunPodSandbox"] });
      assert.deepEqual(sels(p.registered!.selectors), want(selectors));
      const infos = new Map((await rt.listPlugins()).map((i) => [i.plugin!.name, i]));
      assert.deepEqual(sels(infos.get("sel")!.selectors), want(selectors));
      assert.deepEqual(infos.get("all")!.selectors, []);
      const pods = [
        pod("p-default"),
        pod("p-prod", { namespace: "prod" }),
        pod("p-web", { namespace: "staging", labels: { app: "web" } }),
        pod("p-canary", { namespace: "staging", labels: { app: "web", canary: "1" } }),
      ];
      for (const x of pods) await rt.adapt.runPodSandbox({ pod: x }, { timeoutMs: WAIT_MS });
      assert.deepEqual(
        ps.req("10-sel", "RunPodSandbox").map((r) => r.pod.id),
        ["p-prod", "p-web"],
      );
      assert.equal(ps.req("20-all", "RunPodSandbox").length, 4);
      const info = (await rt.listPlugins()).find((i) => i.plugin!.name === "sel")!;
      assert.equal(info.counters!.filtered, 2n);
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("an invalid label selector is refused for good", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    ps.start("10", "badsel", { events: ["RunPodSandbox"], options: { selectors: [{ podLabels: "app in (a," }] } });
    await assert.rejects(ps.runs.get("10-badsel")!, (e: Error) => {
      assert.ok(e instanceof RegistrationRefusedError);
      assert.equal(e.reason, "REGISTRATION_REFUSAL_INVALID_SELECTORS");
      assert.match(e.rawMessage, /pod_labels/);
      return true;
    });
  }));

test("status is shown and kept across an nrid restart", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    let rt = new Runtime(nrid);
    const status = async () => {
      const i = (await rt.listPlugins())[0];
      return [i.status, i.statusReason];
    };
    try {
      const p = await ps.startRegistered("10", "st", {
        events: ["RunPodSandbox"],
        options: { status: PluginStatus.NOT_READY, statusReason: "warming up" },
      });
      assert.deepEqual(await status(), [PluginStatus.NOT_READY, "warming up"]);
      await p.setStatus(PluginStatus.READY, "warm");
      assert.deepEqual(await status(), [PluginStatus.READY, "warm"]);
      await p.setStatus("DEGRADED", "backend slow");
      assert.deepEqual(await status(), [PluginStatus.DEGRADED, "backend slow"]);
      await p.setStatus(PluginStatus.NOT_READY, "backend down");
      assert.deepEqual(await status(), [PluginStatus.NOT_READY, "backend down"]);

      // nrid restarts: the plugin registers again, NOT_READY still.
      const first = p.registered!.instanceId;
      await rt.close();
      await nrid.stop();
      await waitFor(() => p.registered === undefined, "the registration to end");
      await nrid.start();
      const reg = await p.waitRegistered(WAIT_MS);
      assert.notEqual(reg.instanceId, first);
      rt = new Runtime(nrid);
      assert.deepEqual(await status(), [PluginStatus.NOT_READY, "backend down"]);
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("a status set during the first synchronize reaches nrid", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    const seen: unknown[] = [];
    try {
      await ps.startRegistered("10", "warm", {
        events: ["RunPodSandbox"],
        // Before Registered: sent at once (nrid takes it from Configure on),
        // and again once registered.
        behave: {
          Synchronize: async (_req, ctx) => {
            await ctx.plugin.setStatus(PluginStatus.READY, "cache loaded");
            for (const i of await rt.listPlugins()) seen.push([i.state, i.status, i.statusReason]);
          },
        },
        options: { status: PluginStatus.NOT_READY },
      });
      // In effect while the plugin was still synchronizing.
      assert.deepEqual(seen, [[PluginState.SYNCHRONIZING, PluginStatus.READY, "cache loaded"]]);
      await waitFor(async () => {
        const i = (await rt.listPlugins())[0];
        return i.status === PluginStatus.READY && i.statusReason === "cache loaded";
      }, "the status to reach nrid");
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

for (const withResync of [true, false]) {
  test(`requestResync brings a Synchronize with the epoch (${withResync ? "resync handler" : "synchronize only"})`, () =>
    withNrid("", async (nrid) => {
      const ps = new Plugins(nrid);
      const rt = new Runtime(nrid);
      try {
        await rt.attach([pod("p0")]);
        const p = await ps.startRegistered("10", "rs", { events: ["RunPodSandbox"], withResync });
        const epoch = await p.requestResync("lost my cache");
        assert.ok(epoch >= 2n);
        const method = withResync ? "Resync" : "Synchronize";
        const req = await waitFor(() => ps.req("10-rs", method).find((r) => r.epoch === epoch), "the requested resync");
        assert.equal(req.reason, SyncReason.PLUGIN_REQUESTED);
        assert.deepEqual(
          req.pods.map((x: { id: string }) => x.id),
          ["p0"],
        );
        assert.equal((await rt.listPlugins())[0].counters!.requestedResyncs, 1n);
      } finally {
        await ps.stopAll();
        await rt.close();
      }
    }));
}
