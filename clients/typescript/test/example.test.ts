// The example plugin (examples/env-ulimit-injector), started both ways: by
// hand with flags, and launched by nrid with the NRI_GRPC_* environment and a
// drop-in configuration.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { Code } from "@nri-grpc/plugin";
import { PKG_DIR, Runtime, WAIT_MS, ctr, pod, rejection, waitFor, withNrid } from "./harness.js";

const EXAMPLE = path.join(PKG_DIR, "dist-test", "examples", "env-ulimit-injector", "main.js");
const o = { timeoutMs: WAIT_MS };

async function checkInjection(rt: Runtime, defaults: Record<string, string>): Promise<void> {
  const annotations = {
    "env.noderesource.dev/pod": JSON.stringify({ POD_WIDE: "1", "-HOME": "" }),
    "env.noderesource.dev/container.app": JSON.stringify({ APP_ONLY: "yes" }),
    "ulimits.noderesource.dev": JSON.stringify([{ type: "nofile", soft: 1024, hard: 4096 }]),
  };
  const p = pod("pod0", { annotations });
  let rsp = await rt.adapt.createContainer({ pod: p, container: ctr("c1", "pod0", { name: "app" }) }, o);
  assert.deepEqual(Object.fromEntries(rsp.adjust!.env.map((kv) => [kv.key, kv.value])), { ...defaults, APP_ONLY: "yes" });
  assert.deepEqual(rsp.adjust!.rlimits.map((r) => [r.type, r.soft, r.hard]), [["RLIMIT_NOFILE", 1024n, 4096n]]);
  rsp = await rt.adapt.createContainer({ pod: p, container: ctr("c2", "pod0", { name: "sidecar" }) }, o);
  assert.deepEqual(Object.fromEntries(rsp.adjust!.env.map((kv) => [kv.key, kv.value])), { ...defaults, POD_WIDE: "1", "-HOME": "" });
  const bad = pod("p2", { annotations: { "ulimits.noderesource.dev": JSON.stringify([{ type: "nofile", soft: 9, hard: 1 }]) } });
  const r = await rejection(rt.adapt.createContainer({ pod: bad, container: ctr("c3", "p2") }, o));
  assert.equal(r.err.code, Code.InvalidArgument);
  assert.match(r.err.rawMessage, /soft limit 9 is above the hard limit 1/);
  assert.equal(r.reason, "DISPATCH_OUTCOME_VETOED");
}

const registered = (rt: Runtime, full: string) =>
  waitFor(async () => (await rt.listPlugins()).some((i) => `${i.plugin?.index}-${i.plugin?.name}` === full), `${full} to register`);

test("the example, started by hand", () =>
  withNrid("", async (nrid) => {
    const rt = new Runtime(nrid);
    const proc = spawn(
      process.execPath,
      [EXAMPLE, "--server", "unix://" + nrid.sock, "--endpoint", path.join(nrid.plugins, "30-env-ulimit-injector.sock")],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    try {
      await registered(rt, "30-env-ulimit-injector");
      await checkInjection(rt, {});
    } finally {
      proc.kill("SIGTERM");
      const [code] = await once(proc, "exit");
      assert.equal(code, 0);
      await rt.close();
    }
  }));

test("the example, launched by nrid", async () => {
  const dir = fs.mkdtempSync("/tmp/nri-ex-");
  try {
    const launch = path.join(dir, "launch");
    const conf = path.join(dir, "conf");
    fs.mkdirSync(launch);
    fs.mkdirSync(conf);
    const exe = path.join(launch, "40-env-ulimit-injector");
    fs.writeFileSync(exe, `#!/bin/sh\nexec ${process.execPath} ${EXAMPLE} "$@"\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(conf, "env-ulimit-injector.conf"), JSON.stringify({ env: { FROM_CONFIG: "on" } }));
    await withNrid(`[launch]\nplugin_dir = "${launch}"\nconfig_dir = "${conf}"\n`, async (nrid) => {
      const rt = new Runtime(nrid);
      try {
        await registered(rt, "40-env-ulimit-injector");
        await checkInjection(rt, { FROM_CONFIG: "on" });
      } finally {
        await rt.close();
      }
      await nrid.stop();
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
