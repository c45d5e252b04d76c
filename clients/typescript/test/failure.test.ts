// A plugin that errors and then dies, under each failure policy.

import assert from "node:assert/strict";
import { once } from "node:events";
import { test } from "node:test";

import { Code } from "@nri-grpc/plugin";
import { Runtime, WAIT_MS, ctr, pod, rejection, spawnPlugin, waitFor, withNrid } from "./harness.js";

const o = { timeoutMs: WAIT_MS };

async function registered(rt: Runtime, full: string, otherThan = ""): Promise<string> {
  return waitFor(async () => {
    for (const i of await rt.listPlugins()) {
      if (`${i.plugin?.index}-${i.plugin?.name}` === full && i.instanceId !== otherThan) return i.instanceId;
    }
    return "";
  }, `${full} to register`);
}

const unregistered = (rt: Runtime) => waitFor(async () => (await rt.listPlugins()).length === 0, "no plugin registered");

const create = (rt: Runtime, id: string, annotations: Record<string, string> = {}) =>
  rt.adapt.createContainer({ pod: pod(), container: ctr(id, "pod0", { annotations }) }, o);

test("a required plugin vetoes, then is killed", () =>
  withNrid('[[plugin]]\nname = "30-failing"\nrequired = true\n', async (nrid) => {
    const rt = new Runtime(nrid);
    const proc = spawnPlugin("plugins/failing.js", nrid.sock, nrid.plugins, "30", "failing", "fail");
    try {
      await registered(rt, "30-failing");
      assert.ok((await rt.listPlugins())[0].failurePolicy?.failRequest);
      let r = await rejection(create(rt, "c1", { "test.nri/veto": "" }));
      assert.equal(r.err.code, Code.PermissionDenied);
      assert.equal(r.reason, "DISPATCH_OUTCOME_VETOED");
      assert.equal(r.plugins, "30-failing");
      const ok = await create(rt, "c2");
      assert.deepEqual(ok.adjust!.env.map((kv) => [kv.key, kv.value]), [["FAILING_PLUGIN", "was-here"]]);

      proc.kill("SIGKILL");
      await once(proc, "exit");
      r = await rejection(create(rt, "c3"));
      assert.equal(r.err.code, Code.Unavailable);
      assert.equal(r.reason, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE");
      assert.equal(r.plugins, "30-failing");
      await unregistered(rt);
      r = await rejection(rt.adapt.runPodSandbox({ pod: pod("p2") }, o));
      assert.equal(r.reason, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE");
      await rt.adapt.postStartContainer({ pod: pod(), container: ctr("c2") }, o);
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGKILL");
        await once(proc, "exit");
      }
      await rt.close();
    }
  }));

test("an ignored plugin times out, is evicted, registers again, then is killed", () =>
  withNrid('[server]\nrequest_timeout = "1s"\n', async (nrid) => {
    const rt = new Runtime(nrid);
    const proc = spawnPlugin("plugins/failing.js", nrid.sock, nrid.plugins, "30", "failing");
    try {
      const first = await registered(rt, "30-failing");
      const r = await rejection(create(rt, "c1", { "test.nri/veto": "" }));
      assert.equal(r.reason, "DISPATCH_OUTCOME_VETOED");
      let rsp = await create(rt, "c2", { "test.nri/hang": "" });
      assert.deepEqual(rsp.adjust?.env ?? [], []);
      const second = await registered(rt, "30-failing", first);
      assert.notEqual(second, first);
      rsp = await create(rt, "c3");
      assert.deepEqual(rsp.adjust!.env.map((kv) => kv.key), ["FAILING_PLUGIN"]);

      proc.kill("SIGKILL");
      await once(proc, "exit");
      rsp = await create(rt, "c4");
      assert.deepEqual(rsp.adjust?.env ?? [], []);
      await unregistered(rt);
      rsp = await create(rt, "c5");
      assert.deepEqual(rsp.adjust?.env ?? [], []);
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGKILL");
        await once(proc, "exit");
      }
      await rt.close();
    }
  }));
