// What an operator sees of a plugin: grpcurl lists, describes and
// health-checks it on its socket (reflection and health, as the Go SDK
// serves them), and nrid shows the SDK version from package.json.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { test, type TestContext } from "node:test";

import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { NRI_VERSION, PROTOCOL, REFLECTION_SERVICES, VERSION, type Plugin } from "@nri-grpc/plugin";
import { PluginService } from "@nri-grpc/plugin/gen/plugin_service_pb";
// The reflection services' descriptors, to call them as a client.
import { pluginDescriptors } from "../src/reflection.js";
import { PKG_DIR, Plugins, Runtime, WAIT_MS, waitFor, withNrid } from "./harness.js";

const ROOT = path.resolve(PKG_DIR, "..", "..");

/**
 * $GRPCURL (make ts-test sets it to .tmp/bin/grpcurl), else .tmp/bin/grpcurl;
 * undefined (the test skips) when there is none. A $GRPCURL that does not
 * exist fails: make built it.
 */
function grpcurlBinary(): string | undefined {
  const env = process.env.GRPCURL;
  if (env) {
    fs.accessSync(env, fs.constants.X_OK);
    return env;
  }
  const local = path.join(ROOT, ".tmp", "bin", "grpcurl");
  return fs.existsSync(local) ? local : undefined;
}

const SKIP_GRPCURL = grpcurlBinary() ? false : "grpcurl not found: run `make grpcurl` (make ts-test builds it) or set GRPCURL";

/** Runs grpcurl against the plugin's socket, as an operator would; rejects on a non-zero exit. */
function grpcurl(p: Plugin, args: string[], data?: unknown): Promise<string> {
  const sock = p.endpoint.slice("unix://".length);
  const flags = data === undefined ? [] : ["-d", JSON.stringify(data)];
  return new Promise((resolve, reject) => {
    execFile(
      grpcurlBinary()!,
      ["-plaintext", "-max-time", String(WAIT_MS / 1000), ...flags, "-unix", sock, ...args],
      { timeout: WAIT_MS + 5000 },
      (err, stdout, stderr) => (err ? reject(new Error(`grpcurl ${args.join(" ")}: ${err.message}: ${stderr}`)) : resolve(stdout)),
    );
  });
}

/** The last comment line above the line starting with `line` in proto/nri/v1beta1/<file>. */
function commentAbove(file: string, line: string): string {
  const lines = fs.readFileSync(path.join(ROOT, "proto", "nri", "v1beta1", file), "utf8").split("\n");
  const i = lines.findIndex((l) => l.trim().startsWith(line));
  assert.ok(i > 0 && lines[i - 1].trim().startsWith("//"), `no comment above ${line} in ${file}`);
  return lines[i - 1].trim();
}

const withPlugin = (name: string, fn: (p: Plugin, ps: Plugins) => Promise<void>) => (_t: TestContext) =>
  withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    try {
      await fn(await ps.startRegistered("10", name, { events: ["RunPodSandbox"] }), ps);
    } finally {
      await ps.stopAll();
    }
  });

test(
  "grpcurl lists PluginService, health and reflection",
  { skip: SKIP_GRPCURL },
  withPlugin("list", async (p) => {
    const services = (await grpcurl(p, ["list"])).split("\n").filter(Boolean);
    assert.deepEqual(services.sort(), [
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "nri.v1beta1.PluginService",
    ]);
    const methods = (await grpcurl(p, ["list", "nri.v1beta1.PluginService"])).split("\n").filter(Boolean);
    assert.deepEqual(methods.sort(), PluginService.methods.map((m) => `nri.v1beta1.PluginService.${m.name}`).sort());
  }),
);

test(
  "grpcurl describes PluginService with its comments",
  { skip: SKIP_GRPCURL },
  withPlugin("describe", async (p) => {
    let out = await grpcurl(p, ["describe", "nri.v1beta1.PluginService"]);
    assert.match(out, /nri\.v1beta1\.PluginService is a service:/);
    assert.match(out, /service PluginService \{/);
    // The comments come from the descriptor set with source info (the
    // generated code has none).
    assert.ok(out.includes(commentAbove("plugin_service.proto", "service PluginService {")), out);
    assert.ok(out.includes(commentAbove("plugin_service.proto", "rpc Configure(")), out);
    assert.match(out, /rpc Configure \( \.nri\.v1beta1\.ConfigureRequest \) returns \( \.nri\.v1beta1\.ConfigureResponse \)/);
    // A message of an imported file, an enum value, health and reflection resolve too.
    out = await grpcurl(p, ["describe", "nri.v1beta1.PodSandbox"]);
    assert.ok(out.includes("message PodSandbox {") && out.includes(commentAbove("types.proto", "message PodSandbox {")), out);
    out = await grpcurl(p, ["describe", "nri.v1beta1.EVENT_CREATE_CONTAINER"]);
    assert.match(out, /is an enum value:/);
    out = await grpcurl(p, ["describe", "grpc.health.v1.Health"]);
    assert.match(out, /rpc Check \( \.grpc\.health\.v1\.HealthCheckRequest \)/);
    out = await grpcurl(p, ["describe", "grpc.reflection.v1.ServerReflection"]);
    assert.match(out, /rpc ServerReflectionInfo \( stream \.grpc\.reflection\.v1\.ServerReflectionRequest \)/);
  }),
);

test(
  "grpcurl health check follows the registration",
  { skip: SKIP_GRPCURL },
  () =>
    withNrid("", async (nrid) => {
      const ps = new Plugins(nrid);
      try {
        const p = await ps.startRegistered("10", "health", { events: ["RunPodSandbox"] });
        for (const service of ["", "nri.v1beta1.PluginService"]) {
          assert.deepEqual(JSON.parse(await grpcurl(p, ["grpc.health.v1.Health/Check"], { service })), { status: "SERVING" });
        }
        // nrid stops: the registration ends, and health says so.
        await nrid.stop();
        await waitFor(() => p.registered === undefined, "the registration to end");
        assert.deepEqual(JSON.parse(await grpcurl(p, ["grpc.health.v1.Health/Check"])), { status: "NOT_SERVING" });
        await nrid.start();
        await p.waitRegistered(WAIT_MS);
        assert.deepEqual(JSON.parse(await grpcurl(p, ["grpc.health.v1.Health/Check"])), { status: "SERVING" });
      } finally {
        await ps.stopAll();
      }
    }),
);

test(
  "reflection v1alpha answers like v1; unknown symbols are NOT_FOUND and the stream goes on",
  withPlugin("alpha", async (p) => {
    const registry = pluginDescriptors().registry;
    const sock = p.endpoint.slice("unix://".length);
    const sm = new Http2SessionManager("http://localhost", {}, { createConnection: () => net.createConnection(sock) });
    try {
      for (const name of REFLECTION_SERVICES) {
        const svc = registry.getService(name)!;
        const client = createClient(svc, createGrpcTransport({ baseUrl: "http://localhost", sessionManager: sm })) as any;
        const Req = svc.methods[0].input;
        const reqs = [
          { messageRequest: { case: "listServices", value: "" } },
          { messageRequest: { case: "fileContainingSymbol", value: "nri.v1beta1.NoSuchThing" } },
          { messageRequest: { case: "fileContainingSymbol", value: "nri.v1beta1.PluginService.Configure" } },
          { messageRequest: { case: "fileByFilename", value: "google/protobuf/duration.proto" } },
        ];
        async function* send() {
          for (const r of reqs) yield create(Req, r as never);
        }
        const got: any[] = [];
        for await (const rsp of client.serverReflectionInfo(send(), { timeoutMs: WAIT_MS })) got.push(rsp.messageResponse);
        assert.equal(got.length, reqs.length, name);
        assert.equal(got[0].case, "listServicesResponse");
        assert.ok(got[0].value.service.some((s: { name: string }) => s.name === "nri.v1beta1.PluginService"), name);
        assert.equal(got[1].case, "errorResponse");
        assert.equal(got[1].value.errorCode, Code.NotFound);
        assert.equal(got[2].case, "fileDescriptorResponse");
        const names = got[2].value.fileDescriptorProto.map((b: Uint8Array) => fromBinary(FileDescriptorProtoSchema, b).name);
        // The file first, then its imports; with its comments.
        assert.equal(names[0], "nri/v1beta1/plugin_service.proto");
        assert.ok(names.includes("nri/v1beta1/types.proto"), names.join(","));
        const first = fromBinary(FileDescriptorProtoSchema, got[2].value.fileDescriptorProto[0]);
        assert.ok((first.sourceCodeInfo?.location.length ?? 0) > 0, "no source info");
        assert.deepEqual(
          got[3].value.fileDescriptorProto.map((b: Uint8Array) => fromBinary(FileDescriptorProtoSchema, b).name),
          ["google/protobuf/duration.proto"],
        );
      }
    } finally {
      sm.abort();
    }
  }),
);

test("registers the SDK version from package.json", async () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(PKG_DIR, "package.json"), "utf8"));
  assert.equal(VERSION, pkg.version);
  assert.equal(PROTOCOL, PluginService.typeName.split(".")[1]);
  assert.equal(NRI_VERSION, `typescript-sdk ${PROTOCOL} nri-grpc/${pkg.version}`);
  await withNrid("", async (nrid) => {
    const ps = new Plugins(nrid);
    const rt = new Runtime(nrid);
    try {
      await ps.startRegistered("10", "ver", { events: ["RunPodSandbox"], options: { pluginVersion: "2.3.4" } });
      const infos = await rt.listPlugins();
      assert.deepEqual(
        infos.map((i) => [i.nriVersion, i.pluginVersion]),
        [[`typescript-sdk v1beta1 nri-grpc/${pkg.version}`, "2.3.4"]],
      );
    } finally {
      await rt.close();
      await ps.stopAll();
    }
  });
});
