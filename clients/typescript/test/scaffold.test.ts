// `nrictl new --lang typescript` (cmd/nrictl/templates/typescript): the
// generated project compiles with tsc against this SDK's build, and its own
// tests pass, the plugin against a real nrid among them.

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { PKG_DIR, nridBinary } from "./harness.js";

const ROOT = path.resolve(PKG_DIR, "..", "..");

/** The nrictl binary: $NRICTL (make ts-test builds it), else built here with go build. */
function nrictlBinary(): string {
  if (process.env.NRICTL) return process.env.NRICTL;
  const out = path.join(os.tmpdir(), `nri-tstest-nrictl-${process.getuid?.() ?? 0}`);
  execFileSync("go", ["build", "-o", out, "./cmd/nrictl"], { cwd: ROOT, stdio: "inherit" });
  return out;
}

test("nrictl new --lang typescript builds and passes its tests", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "nri-scaffold-"));
  try {
    const dir = path.join(tmp, "hello");
    execFileSync(nrictlBinary(), ["new", "--lang", "typescript", "--name", "hello", "--index", "10", "--sdk", ROOT, dir]);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    assert.equal(pkg.dependencies["@nri-grpc/plugin"], `file:${ROOT}/clients/typescript`);
    // What `npm install` of the file: dependency and the devDependencies
    // gives, without the network: links to this SDK and its node_modules
    // (the same pinned versions as the template's).
    const own = JSON.parse(fs.readFileSync(path.join(PKG_DIR, "package.json"), "utf8"));
    const link = (name: string, target: string) => {
      fs.mkdirSync(path.dirname(path.join(dir, "node_modules", name)), { recursive: true });
      fs.symlinkSync(target, path.join(dir, "node_modules", name));
    };
    link("@nri-grpc/plugin", PKG_DIR);
    for (const [name, version] of Object.entries<string>(pkg.devDependencies)) {
      assert.equal(version, own.dependencies[name] ?? own.devDependencies[name], `${name}: the template's version is not the SDK's`);
      link(name, path.join(PKG_DIR, "node_modules", name));
    }
    const tsc = spawnSync(path.join(PKG_DIR, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"], { cwd: dir, encoding: "utf8" });
    assert.equal(tsc.status, 0, `tsc:\n${tsc.stdout}${tsc.stderr}`);
    // Without NODE_TEST_CONTEXT, which this test runner sets for its own
    // children: the nested run reports in TAP on its stdout.
    const env: NodeJS.ProcessEnv = { ...process.env, NRID: nridBinary() };
    delete env.NODE_TEST_CONTEXT;
    const run = spawnSync(process.execPath, ["--test", "--test-reporter=tap", "dist/test/"], { cwd: dir, encoding: "utf8", env });
    assert.equal(run.status, 0, `node --test:\n${run.stdout}${run.stderr}`);
    assert.match(run.stdout, /^# pass 2$/m, run.stdout);
    assert.match(run.stdout, /^# skipped 0$/m, run.stdout);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
