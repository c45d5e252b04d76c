// Events: order, subscriptions, adjustments, updates, vetoes and validation.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Adjustment, Code, ConnectError, Field, NotRegisteredError, Update, evict } from "@nri-grpc/plugin";
import type { Container, PodSandbox } from "@nri-grpc/plugin/gen/types_pb";
import { Plugins, Runtime, WAIT_MS, ctr, pod, rejection, withNrid } from "./harness.js";

const POD_EVENTS = ["RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox"];
const CTR_EVENTS = [
  "CreateContainer",
  "PostCreateContainer",
  "StartContainer",
  "PostStartContainer",
  "UpdateContainer",
  "PostUpdateContainer",
  "StopContainer",
  "RemoveContainer",
];
const ORDER = [
  "RunPodSandbox",
  "CreateContainer",
  "PostCreateContainer",
  "StartContainer",
  "PostStartContainer",
  "UpdatePodSandbox",
  "PostUpdatePodSandbox",
  "UpdateContainer",
  "PostUpdateContainer",
  "StopContainer",
  "RemoveContainer",
  "StopPodSandbox",
  "RemovePodSandbox",
];
const o = { timeoutMs: WAIT_MS };

async function lifecycle(rt: Runtime, p: PodSandbox, c: Container): Promise<void> {
  const a = rt.adapt;
  await a.runPodSandbox({ pod: p }, o);
  await a.createContainer({ pod: p, container: c }, o);
  await a.postCreateContainer({ pod: p, container: c }, o);
  await a.startContainer({ pod: p, container: c }, o);
  await a.postStartContainer({ pod: p, container: c }, o);
  await a.updatePodSandbox({ pod: p }, o);
  await a.postUpdatePodSandbox({ pod: p }, o);
  await a.updateContainer({ pod: p, container: c, linuxResources: {} }, o);
  await a.postUpdateContainer({ pod: p, container: c }, o);
  await a.stopContainer({ pod: p, container: c }, o);
  await a.removeContainer({ pod: p, container: c }, o);
  await a.stopPodSandbox({ pod: p }, o);
  await a.removePodSandbox({ pod: p }, o);
}

test("events in order across plugins and subscriptions", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    try {
      await ps.startRegistered("20", "b", { events: [...POD_EVENTS, ...CTR_EVENTS] });
      await ps.startRegistered("10", "a", { events: [...POD_EVENTS, ...CTR_EVENTS] });
      await ps.startRegistered("10", "only-start", { events: ["StartContainer"] });
      ps.log.length = 0;
      await lifecycle(rt, pod(), ctr());
      const want: string[] = [];
      for (const m of ORDER) {
        want.push(`10-a:${m}`);
        if (m === "StartContainer") want.push("10-only-start:StartContainer");
        want.push(`20-b:${m}`);
      }
      assert.deepEqual(ps.log, want);
      const req = ps.req("10-a", "CreateContainer")[0];
      assert.equal(req.pod.id, "pod0");
      assert.equal(req.container.id, "ctr0");
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("adjustments merge with removal markers", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    try {
      await ps.startRegistered("10", "first", {
        events: ["CreateContainer"],
        behave: {
          CreateContainer: () =>
            new Adjustment()
              .addEnv("FROM_A", "1")
              .addEnv("SHARED", "a")
              .addAnnotation("a.example/set", "yes")
              .removeAnnotation("runtime.example/drop")
              .addRlimit("RLIMIT_NOFILE", 1024, 512)
              .setLinuxMemoryLimit(1 << 30)
              .response(),
        },
      });
      await ps.startRegistered("20", "second", {
        events: ["CreateContainer"],
        behave: {
          CreateContainer: (req) => {
            assert.ok(req.container.env.includes("SHARED=a") && req.container.env.includes("FROM_A=1"));
            // Plain init objects work too.
            return { adjust: new Adjustment().removeEnv("SHARED").addEnv("SHARED", "b").removeEnv("FROM_A").proto };
          },
        },
      });
      const c = ctr("ctr0", "pod0", { env: ["KEEP=1"], annotations: { "runtime.example/drop": "x" } });
      const rsp = await rt.adapt.createContainer({ pod: pod(), container: c }, o);
      assert.deepEqual(Object.fromEntries(rsp.adjust!.env.map((kv) => [kv.key, kv.value])), { SHARED: "b", "-FROM_A": "" });
      assert.deepEqual(rsp.adjust!.annotations, { "a.example/set": "yes", "-runtime.example/drop": "" });
      assert.deepEqual(
        rsp.adjust!.rlimits.map((r) => [r.type, r.hard, r.soft]),
        [["RLIMIT_NOFILE", 1024n, 512n]],
      );
      assert.equal(rsp.adjust!.linux?.resources?.memory?.limit, 1n << 30n);
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("conflicting adjustments fail the creation", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    const setEnv = { CreateContainer: () => new Adjustment().addEnv("X", "1").response() };
    try {
      await ps.startRegistered("10", "a", { events: ["CreateContainer"], behave: setEnv });
      await ps.startRegistered("20", "b", { events: ["CreateContainer"], behave: setEnv });
      const r = await rejection(rt.adapt.createContainer({ pod: pod(), container: ctr() }, o));
      assert.equal(r.err.code, Code.FailedPrecondition);
      assert.equal(r.reason, "DISPATCH_OUTCOME_CONFLICT");
      assert.deepEqual(r.plugins.split(",").sort(), ["10-a", "20-b"]);
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("a veto stops delivery; notification errors are recorded", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    const boom = () => {
      throw new Error("disk full");
    };
    try {
      await ps.startRegistered("10", "veto", {
        events: ["CreateContainer", "StartContainer", "PostStartContainer"],
        behave: {
          CreateContainer: () => {
            throw new ConnectError("annotation foo: not a number", Code.InvalidArgument);
          },
          StartContainer: boom,
          PostStartContainer: boom,
        },
      });
      await ps.startRegistered("20", "later", { events: ["CreateContainer", "StartContainer", "PostStartContainer"] });
      const p = pod();
      const c = ctr();
      let r = await rejection(rt.adapt.createContainer({ pod: p, container: c }, o));
      assert.equal(r.err.code, Code.InvalidArgument);
      assert.match(r.err.rawMessage, /annotation foo: not a number/);
      assert.equal(r.reason, "DISPATCH_OUTCOME_VETOED");
      assert.equal(r.plugins, "10-veto");
      r = await rejection(rt.adapt.startContainer({ pod: p, container: c }, o));
      assert.equal(r.err.code, Code.FailedPrecondition);
      assert.match(r.err.rawMessage, /disk full/);
      assert.deepEqual(ps.calls("CreateContainer", "StartContainer"), ["10-veto:CreateContainer", "10-veto:StartContainer"]);
      const rsp = await rt.adapt.postStartContainer({ pod: p, container: c }, o);
      assert.deepEqual(
        rsp.pluginErrors.map((e) => [e.plugin?.index, e.plugin?.name, e.code]),
        [["10", "veto", Code.FailedPrecondition]],
      );
      assert.deepEqual(ps.calls("PostStartContainer"), ["10-veto:PostStartContainer", "20-later:PostStartContainer"]);
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("a validator sees the merged adjustment and rejects", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    try {
      await ps.startRegistered("10", "adj", {
        events: ["CreateContainer"],
        behave: { CreateContainer: (req) => new Adjustment().addEnv(req.container.annotations.env ?? "OK", "1").response() },
      });
      await ps.startRegistered("90", "val", {
        events: ["ValidateContainerAdjustment"],
        behave: {
          ValidateContainerAdjustment: (req) => {
            const owner = req.owners.owners[req.container.id]?.compound[Field.ENV]?.owners.FORBIDDEN;
            if (owner) throw new Error(`FORBIDDEN set by ${owner}`);
          },
        },
      });
      const ok = await rt.adapt.createContainer({ pod: pod(), container: ctr("c1") }, o);
      assert.deepEqual(ok.adjust!.env.map((kv) => kv.key), ["OK"]);
      const vreq = ps.req("90-val", "ValidateContainerAdjustment")[0];
      assert.deepEqual(vreq.plugins.map((p: any) => `${p.index}-${p.name}`).sort(), ["10-adj", "90-val"]);
      const r = await rejection(
        rt.adapt.createContainer({ pod: pod(), container: ctr("c2", "pod0", { annotations: { env: "FORBIDDEN" } }) }, o),
      );
      assert.equal(r.err.code, Code.FailedPrecondition);
      assert.match(r.err.rawMessage, /FORBIDDEN set by 10-adj/);
      assert.equal(r.reason, "DISPATCH_OUTCOME_REJECTED");
    } finally {
      await ps.stopAll();
      await rt.close();
    }
  }));

test("updates and evictions", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    const p = pod();
    let plugin;
    try {
      await rt.attach([p], [ctr("other")]);
      plugin = await ps.startRegistered("10", "upd", {
        events: ["UpdateContainer", "StopContainer"],
        behave: {
          UpdateContainer: (req) => ({
            update: [
              new Update(req.container.id).setLinuxCPUShares(512).proto,
              new Update("other").setLinuxMemoryLimit(1 << 20).setIgnoreFailure().proto,
            ],
          }),
          StopContainer: () => ({
            update: [new Update("other").setLinuxCPUSetCPUs("0-1").proto],
            evict: [evict("other", "make room")],
          }),
        },
      });
      const c = ctr("target");
      let rsp = await rt.adapt.updateContainer({ pod: p, container: c, linuxResources: {} }, o);
      assert.equal(rsp.linuxResources?.cpu?.shares, 512n);
      assert.deepEqual(
        rsp.update.map((u) => [u.containerId, u.linux?.resources?.memory?.limit, u.ignoreFailure]),
        [["other", 1n << 20n, true]],
      );
      const stop = await rt.adapt.stopContainer({ pod: p, container: c }, o);
      assert.deepEqual(stop.update.map((u) => u.containerId), ["other"]);
      assert.deepEqual(stop.evict.map((e) => [e.containerId, e.reason]), [["other", "make room"]]);

      let res = await plugin.updateContainers([new Update("other").setLinuxCPUQuota(5000)]);
      assert.deepEqual(res, { failed: [], failedEvictions: [] });
      const last = rt.applied[rt.applied.length - 1];
      assert.equal(last.plugin, "10-upd");
      assert.equal(last.update[0].linux?.resources?.cpu?.quota, 5000n);
      rt.failUpdates = true;
      res = await plugin.updateContainers([new Update("other").setLinuxCPUQuota(6000)], [evict("other", "bye")]);
      assert.deepEqual(res.failed.map((u) => u.containerId), ["other"]);
      assert.deepEqual(res.failedEvictions.map((e) => e.containerId), ["other"]);
    } finally {
      await ps.stopAll();
      await rt.close();
    }
    await assert.rejects(plugin.updateContainers([new Update("other")]), NotRegisteredError);
  }));
