// Registration: Configure, Synchronize, Registered, the endpoint, instance ids.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as path from "node:path";
import { test } from "node:test";

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { Event, Plugin, PluginService, RegistrationRefusedError, eventMask } from "@nri-grpc/plugin";
import { Plugins, Runtime, WAIT_MS, pod, withNrid } from "./harness.js";

test("registers and reports the registration", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    try {
      const p = await ps.startRegistered("10", "reg", {
        events: ["CreateContainer", "StopContainer"],
        options: { pluginVersion: "1.2.3" },
      });
      const reg = p.registered!;
      assert.ok(reg.instanceId);
      assert.equal(reg.instanceId, p.instanceId);
      assert.equal(reg.identity, `uid:${process.geteuid!()}`);
      assert.equal(reg.events, eventMask(Event.CREATE_CONTAINER, Event.STOP_CONTAINER));
      assert.deepEqual(ps.calls(), ["10-reg:Configure", "10-reg:Synchronize"]);
      const cfg = ps.req("10-reg", "Configure")[0];
      assert.equal(cfg.instanceId, reg.instanceId);
      assert.ok(cfg.requestTimeout > 0n);
      assert.equal(ps.req("10-reg", "Synchronize")[0].epoch, 1n);
      const sock = path.join(nrid.plugins, "10-reg.sock");
      assert.equal(p.endpoint, "unix://" + sock);
      const st = fs.lstatSync(sock);
      assert.ok(st.isSocket());
      assert.equal(st.mode & 0o777, 0o600);
      const rt = new Runtime(nrid);
      const infos = await rt.listPlugins();
      assert.deepEqual(
        infos.map((i) => [i.plugin?.index, i.plugin?.name, i.instanceId, i.pluginVersion]),
        [["10", "reg", reg.instanceId, "1.2.3"]],
      );
      await rt.close();
    } finally {
      await ps.stopAll();
    }
    assert.ok(!fs.existsSync(path.join(nrid.plugins, "10-reg.sock")));
  }));

test("refuses calls for another instance", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    try {
      const p = await ps.startRegistered("10", "inst", { events: ["RunPodSandbox"] });
      const sm = new Http2SessionManager("http://localhost", {}, {
        createConnection: () => net.createConnection(p.endpoint.slice("unix://".length)),
      });
      const c = createClient(PluginService, createGrpcTransport({ baseUrl: "http://localhost", sessionManager: sm }));
      const call = (id?: string) =>
        c.runPodSandbox({ pod: pod() }, { timeoutMs: WAIT_MS, headers: id === undefined ? {} : { "nri-instance-id": id } });
      for (const id of ["stale", undefined]) {
        await assert.rejects(call(id), (e: unknown) => ConnectError.from(e).code === Code.Unavailable);
      }
      await assert.rejects(
        c.configure({ instanceId: "x" }, { timeoutMs: WAIT_MS }),
        (e: unknown) => ConnectError.from(e).code === Code.Unavailable,
      );
      await call(p.instanceId);
      assert.deepEqual(ps.calls("RunPodSandbox"), ["10-inst:RunPodSandbox"]);
      sm.abort();
    } finally {
      await ps.stopAll();
    }
  }));

test("a refusal retrying cannot fix ends run", () =>
  withNrid("", async (nrid) => {
    const h = { runPodSandbox() {} };
    assert.throws(() => new Plugin(h, { name: "x", index: "7" }), /two ASCII digits/);
    assert.throws(() => new Plugin({}, { name: "x", index: "10" }), /no event/);
    const ps = new Plugins(nrid);
    const outside = path.join(nrid.dir, "elsewhere.sock");
    const p = ps.start("10", "bad", { events: ["RunPodSandbox"], options: { endpoint: outside } });
    await assert.rejects(ps.runs.get("10-bad")!, (e: unknown) => {
      assert.ok(e instanceof RegistrationRefusedError);
      assert.equal(e.reason, "REGISTRATION_REFUSAL_INVALID_ENDPOINT");
      return true;
    });
    assert.ok(!fs.existsSync(outside));
    assert.equal(p.registered, undefined);
  }));

test("serves health, also to clients that send the socket path as :authority", () =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    try {
      const p = await ps.startRegistered("10", "health", { events: ["RunPodSandbox"] });
      const sock = p.endpoint.slice("unix://".length);
      // gRPC's C core (Python grpcio) sends the percent-encoded socket path
      // as :authority; a raw HTTP/2 request does the same here.
      const session = http2.connect("http://localhost", { createConnection: () => net.createConnection(sock) });
      const check = (service: string) =>
        new Promise<{ status: string | undefined; body: Buffer }>((resolve, reject) => {
          const svc = Buffer.from(service);
          const msg = Buffer.concat([Buffer.from([0x0a, svc.length]), svc]);
          const frame = Buffer.alloc(5);
          frame.writeUInt32BE(msg.length, 1);
          const req = session.request({
            ":method": "POST",
            ":path": "/grpc.health.v1.Health/Check",
            ":authority": encodeURIComponent(sock.slice(1)),
            "content-type": "application/grpc",
            te: "trailers",
          });
          const chunks: Buffer[] = [];
          let status: string | undefined;
          req.on("response", (h) => (status = (h["grpc-status"] as string | undefined) ?? status));
          req.on("trailers", (t) => (status = t["grpc-status"] as string));
          req.on("data", (c: Buffer) => chunks.push(c));
          req.on("end", () => resolve({ status, body: Buffer.concat(chunks) }));
          req.on("error", reject);
          req.end(Buffer.concat([frame, msg]));
        });
      for (const svc of ["", "nri.v1beta1.PluginService"]) {
        const r = await check(svc);
        assert.equal(r.status, "0");
        // HealthCheckResponse{status: SERVING (1)}
        assert.deepEqual([...r.body], [0, 0, 0, 0, 2, 0x08, 0x01]);
      }
      assert.equal((await check("unknown")).status, String(Code.NotFound));
      session.close();
    } finally {
      await ps.stopAll();
    }
  }));
