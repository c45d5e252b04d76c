// The adjustment builders and event helpers, without a server.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Adjustment, Event, Update, evict, eventMask, isMarkedForRemoval, markForRemoval, maskEvents, parseName } from "@nri-grpc/plugin";

test("removal markers", () => {
  assert.equal(markForRemoval("FOO"), "-FOO");
  assert.deepEqual(isMarkedForRemoval("-FOO"), ["FOO", true]);
  assert.deepEqual(isMarkedForRemoval("FOO"), ["FOO", false]);
  const a = new Adjustment()
    .removeAnnotation("a")
    .removeMount("/data")
    .removeEnv("E")
    .removeDevice("/dev/x")
    .removeNamespace("network")
    .removeLinuxSysctl("net.ipv4.ip_forward")
    .removeLinuxNetDevice("eth1")
    .removeLinuxRDT()
    .updateArgs(["sh", "-c", "true"]).proto;
  assert.deepEqual(a.annotations, { "-a": "" });
  assert.deepEqual(a.mounts.map((m) => m.destination), ["-/data"]);
  assert.deepEqual(a.env.map((kv) => [kv.key, kv.value]), [["-E", ""]]);
  assert.deepEqual(a.linux?.devices.map((d) => d.path), ["-/dev/x"]);
  assert.deepEqual(a.linux?.namespaces.map((n) => n.type), ["-network"]);
  assert.deepEqual(a.linux?.sysctl, { "-net.ipv4.ip_forward": "" });
  assert.deepEqual(Object.keys(a.linux?.netDevices ?? {}), ["-eth1"]);
  assert.equal(a.linux?.rdt?.remove, true);
  assert.deepEqual(a.args, ["", "sh", "-c", "true"]);
});

test("wrappers are set even to zero", () => {
  const a = new Adjustment().setLinuxMemoryLimit(0).setLinuxCPUShares(0n).setLinuxOomScoreAdj(0).proto;
  assert.equal(a.linux?.resources?.memory?.limit, 0n);
  assert.equal(a.linux?.resources?.cpu?.shares, 0n);
  assert.equal(a.linux?.oomScoreAdj, 0n);
  assert.equal(a.linux?.resources?.memory?.swap, undefined);
});

test("updates and responses", () => {
  const u = new Update("c1").setLinuxCPUSetCPUs("0-3").setLinuxPidLimits(100).setIgnoreFailure();
  const rsp = new Adjustment().addEnv("A", "1").response([u], [evict("c2", "why")]);
  assert.equal(rsp.update[0].containerId, "c1");
  assert.ok(rsp.update[0].ignoreFailure);
  assert.equal(rsp.update[0].linux?.resources?.cpu?.cpus, "0-3");
  assert.equal(rsp.update[0].linux?.resources?.pids?.limit, 100n);
  assert.deepEqual([rsp.evict[0].containerId, rsp.evict[0].reason], ["c2", "why"]);
});

test("events and names", () => {
  assert.equal(eventMask(Event.RUN_POD_SANDBOX, Event.VALIDATE_CONTAINER_ADJUSTMENT), 0x2001);
  assert.deepEqual(maskEvents(0x9), [Event.RUN_POD_SANDBOX, Event.CREATE_CONTAINER]);
  assert.deepEqual(parseName("10-foo"), ["10", "foo"]);
  assert.equal(parseName("1-foo"), undefined);
});
