// Registering again as soon as nrid is back, however long it was away.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import { test } from "node:test";

import type { Logger } from "@nri-grpc/plugin";
import { Plugins, WAIT_MS, waitFor, withNrid } from "./harness.js";

/** A backoff no test waits out: a plugin that registers again within
 * WAIT_MS did not sleep it. */
const HOURLY: [number, number] = [3_600_000, 3_600_000];

/** A logger that keeps every message. */
function recorder(): Logger & { messages: string[]; find(since: number, ...parts: string[]): string | undefined } {
  const messages: string[] = [];
  const add = (m: string) => void messages.push(m);
  return {
    messages,
    debug: add,
    info: add,
    warn: add,
    error: add,
    find: (since, ...parts) => messages.slice(since).find((m) => parts.every((p) => m.includes(p))),
  };
}

test("registers again as soon as a killed nrid is back", () =>
  withNrid("", async (nrid) => {
    // nrid is killed (its socket file stays, refusing connections) and
    // started again on the same socket, three times: the plugin watches the
    // socket instead of sleeping its (hour-long) backoff.
    const ps = new Plugins(nrid);
    const log = recorder();
    try {
      const p = await ps.startRegistered("10", "back", { events: ["RunPodSandbox"], options: { backoffMs: HOURLY, logger: log } });
      for (let round = 0; round < 3; round++) {
        const first = p.registered!.instanceId;
        const since = log.messages.length;
        await nrid.kill();
        await waitFor(() => p.registered === undefined, "the registration to end");
        // Right after a kill the listening socket may outlive the broken
        // connection for a moment: the quick first retry then fails, and the
        // plugin waits.
        await waitFor(() => log.find(since, "when nrid accepts connections"), "the plugin to wait for nrid");
        assert.ok(fs.existsSync(nrid.sock));
        await nrid.start();
        const reg = await p.waitRegistered(WAIT_MS);
        assert.notEqual(reg.instanceId, first);
      }
    } finally {
      await ps.stopAll();
    }
  }));

test("registers when nrid appears, and stops while waiting for it", () =>
  withNrid("", async (nrid) => {
    await nrid.kill();
    const ps = new Plugins(nrid);
    const log = recorder();
    try {
      const p = ps.start("10", "early", { events: ["RunPodSandbox"], options: { backoffMs: HOURLY, logger: log } });
      await waitFor(() => log.find(0, "failed", "retrying when nrid accepts connections"), "the first failure");
      await nrid.start();
      await p.waitRegistered(WAIT_MS);
      const since = log.messages.length;
      await nrid.kill();
      await waitFor(() => log.find(since, "when nrid accepts connections"), "the plugin to wait for nrid");
      p.stop();
      assert.equal(await ps.runs.get("10-early"), "stopped");
    } finally {
      await ps.stopAll();
    }
  }));

test("a refusal by a serving nrid is retried after the backoff", () =>
  // nrid's rate limit refuses the identity's second registration
  // (RESOURCE_EXHAUSTED): nrid serves, so the plugin backs off instead of
  // retrying as soon as the socket accepts connections.
  withNrid("[server]\nregister_rate = 0.001\nregister_burst = 1\n", async (nrid) => {
    const ps = new Plugins(nrid);
    const log = recorder();
    try {
      await ps.startRegistered("10", "first", { events: ["RunPodSandbox"] });
      ps.start("11", "limited", { events: ["RunPodSandbox"], options: { backoffMs: HOURLY, logger: log } });
      const msg = (await waitFor(() => log.find(0, "ResourceExhausted", "retrying in"), "the refusal"))!;
      const delay = Number(/retrying in (\d+) ms/.exec(msg)![1]);
      assert.ok(delay >= 1_800_000, msg);
    } finally {
      await ps.stopAll();
    }
  }));
