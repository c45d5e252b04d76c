// Shutdown, re-registration, handover, resync and paging.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { ShutdownKind, SyncReason } from "@nri-grpc/plugin";
import { Plugins, Runtime, WAIT_MS, ctr, pod, waitFor, withNrid } from "./harness.js";

test("Shutdown on server stop, then registers again after a restart", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    try {
      const p = await ps.startRegistered("10", "again", { events: ["RunPodSandbox"] });
      const first = p.registered!.instanceId;
      await nrid.stop();
      assert.deepEqual(
        ps.req("10-again", "Shutdown").map((s) => s.kind),
        [ShutdownKind.SERVER_STOPPING],
      );
      await waitFor(() => p.registered === undefined, "the registration to end");
      assert.ok(fs.existsSync(path.join(nrid.plugins, "10-again.sock")));
      await nrid.start();
      const reg = await p.waitRegistered(WAIT_MS);
      assert.notEqual(reg.instanceId, first);
      assert.deepEqual(ps.calls("Configure"), ["10-again:Configure", "10-again:Configure"]);
      const rt = new Runtime(nrid);
      await rt.adapt.runPodSandbox({ pod: pod() }, { timeoutMs: WAIT_MS });
      assert.deepEqual(ps.calls("RunPodSandbox"), ["10-again:RunPodSandbox"]);
      await rt.close();
    } finally {
      await ps.stopAll();
    }
  }));

test("a newer instance replaces the old one", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    try {
      const old = await ps.startRegistered("10", "up", { events: ["RunPodSandbox"], key: "old" });
      const neu = await ps.startRegistered("10", "up", {
        events: ["RunPodSandbox"],
        key: "new",
        options: { endpoint: path.join(nrid.plugins, "10-up-v2.sock") },
      });
      assert.equal(await ps.runs.get("old"), "replaced");
      assert.ok(old.replaced);
      assert.deepEqual(
        ps.req("old", "Shutdown").map((s) => s.kind),
        [ShutdownKind.REPLACED],
      );
      assert.ok(neu.registered && !neu.replaced);
      await rt.adapt.runPodSandbox({ pod: pod() }, { timeoutMs: WAIT_MS });
      assert.equal(ps.req("new", "RunPodSandbox").length, 1);
      assert.equal(ps.req("old", "RunPodSandbox").length, 0);
      assert.deepEqual(
        (await rt.listPlugins()).map((i) => i.instanceId),
        [neu.instanceId],
      );
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("resync replaces the state with a new epoch", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    try {
      const p = await ps.startRegistered("10", "rs", { events: ["StopContainer"], withResync: true });
      assert.ok(p.capabilities.resync && p.registered!.capabilities!.resync);
      await rt.attach([pod("p1")], [ctr("c1", "p1"), ctr("c2", "p1")]);
      await waitFor(() => ps.req("10-rs", "Resync").length === 1, "the first resync");
      const r1 = ps.req("10-rs", "Resync")[0];
      assert.equal(r1.epoch, 2n);
      assert.equal(r1.reason, SyncReason.RUNTIME_RESTARTED);
      assert.deepEqual(r1.containers.map((c: any) => c.id), ["c1", "c2"]);
      await rt.detach();
      await rt.attach([pod("p1"), pod("p2")], [ctr("c1", "p1"), ctr("c3", "p2")]);
      await waitFor(() => ps.req("10-rs", "Resync").length === 2, "the second resync");
      const r2 = ps.req("10-rs", "Resync")[1];
      assert.equal(r2.epoch, 3n);
      assert.deepEqual(r2.containers.map((c: any) => c.id), ["c1", "c3"]);
      assert.deepEqual(ps.calls("Synchronize", "Resync", "StopContainer"), ["10-rs:Synchronize", "10-rs:Resync", "10-rs:Resync"]);
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("without resync, vanished containers arrive as events", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    try {
      await rt.attach([pod("p1")], [ctr("c1", "p1"), ctr("c2", "p1")]);
      const p = await ps.startRegistered("10", "plain", { events: ["StopContainer", "RemoveContainer"] });
      assert.ok(!p.capabilities.resync);
      assert.deepEqual(ps.req("10-plain", "Synchronize")[0].containers.map((c: any) => c.id), ["c1", "c2"]);
      await rt.detach();
      await rt.attach([pod("p1")], [ctr("c1", "p1")]);
      await waitFor(() => ps.calls("RemoveContainer").length > 0, "the synthesized RemoveContainer");
      assert.deepEqual(ps.calls("StopContainer", "RemoveContainer", "Synchronize"), [
        "10-plain:Synchronize",
        "10-plain:StopContainer",
        "10-plain:RemoveContainer",
      ]);
      assert.equal(ps.req("10-plain", "StopContainer")[0].container.id, "c2");
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("a paged Synchronize reaches the handler once", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    const ctrs = Array.from({ length: 100 }, (_, i) => ctr(`c${String(i).padStart(3, "0")}`, "p1", { args: ["x".repeat(2000)] }));
    try {
      await rt.attach([pod("p1")], ctrs);
      const p = ps.start("10", "paged", { events: ["StopContainer"], options: { maxMessageSize: 64 << 10 } });
      // Count the pages nrid sends (the SDK's own Synchronize).
      const pages: boolean[] = [];
      const inner = (p as any).synchronize.bind(p);
      (p as any).synchronize = (req: any, hctx: any) => {
        pages.push(req.more);
        return inner(req, hctx);
      };
      await p.waitRegistered(WAIT_MS);
      assert.ok(pages.length >= 2, `pages: ${pages}`);
      assert.equal(pages[pages.length - 1], false);
      assert.ok(pages.slice(0, -1).every((m) => m));
      const syncs = ps.req("10-paged", "Synchronize");
      assert.equal(syncs.length, 1);
      assert.deepEqual(syncs[0].containers.map((c: any) => c.id), ctrs.map((c) => c.id));
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));
