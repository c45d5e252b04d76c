// Checks the tarball `make package-ts` packed (npm pack):
//
//   node tools/check-pack.mjs TARBALL SCRATCH_DIR
//
// - it holds package.json, README.md, dist/ (ES modules with their .d.ts,
//   the generated code among them) and src/ (for the source maps), nothing
//   else: no tests, no dist-test/, no tools/, no examples;
// - its name and version are package.json's, and the SDK reports that
//   version (VERSION, NRI_VERSION) once installed;
// - installed into SCRATCH_DIR/node_modules (its dependencies linked from
//   this package's node_modules, as npm ci installed them from the lock file)
//   it imports, its reflection descriptors load, and a TypeScript consumer
//   type-checks against its .d.ts.

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const [tarball, scratch] = process.argv.slice(2);
if (!tarball || !scratch) {
  console.error("usage: check-pack.mjs TARBALL SCRATCH_DIR");
  process.exit(2);
}
const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
const problems = [];

const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
  .split("\n")
  .filter((f) => f && !f.endsWith("/"))
  .map((f) => f.replace(/^package\//, ""));
const allowed = (f) =>
  f === "package.json" ||
  f === "README.md" ||
  f === "LICENSE" ||
  /^dist\/.+\.(js|d\.ts|js\.map|d\.ts\.map)$/.test(f) ||
  (/^src\/.+\.ts$/.test(f) && !f.endsWith(".test.ts"));
const stray = files.filter((f) => !allowed(f));
if (stray.length) problems.push(`stray files: ${stray.join(", ")}`);
for (const want of [
  "dist/index.js",
  "dist/index.d.ts",
  "dist/plugin.d.ts",
  "dist/reflection.js",
  "dist/version.js",
  "dist/gen/nri/v1beta1/plugin_service_pb.js",
  "dist/gen/nri/v1beta1/plugin_service_pb.d.ts",
  "dist/gen/nri/v1beta1/types_pb.d.ts",
  "dist/gen/nri/v1beta1/descriptor_set.js",
]) {
  if (!files.includes(want)) problems.push(`missing ${want}`);
}
for (const f of files.filter((f) => f.startsWith("src/") && !f.endsWith(".d.ts"))) {
  const js = "dist/" + f.slice("src/".length).replace(/\.ts$/, ".js");
  if (!files.includes(js)) problems.push(`${f} has no ${js}`);
  if (!files.includes(js.replace(/\.js$/, ".d.ts"))) problems.push(`${f} has no .d.ts`);
}
const want = `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`;
if (path.basename(tarball) !== want) problems.push(`tarball is ${path.basename(tarball)}, want ${want}`);

// Install: the tarball's package, its dependencies from our node_modules.
fs.rmSync(scratch, { recursive: true, force: true });
const dest = path.join(scratch, "node_modules", ...pkg.name.split("/"));
fs.mkdirSync(dest, { recursive: true });
execFileSync("tar", ["-xzf", path.resolve(tarball), "-C", dest, "--strip-components=1"]);
const packed = JSON.parse(fs.readFileSync(path.join(dest, "package.json"), "utf8"));
if (packed.name !== pkg.name || packed.version !== pkg.version) problems.push(`packed package.json is ${packed.name}@${packed.version}`);
for (const scope of ["@bufbuild", "@connectrpc", "@types"]) {
  fs.symlinkSync(path.join(pkgDir, "node_modules", scope), path.join(scratch, "node_modules", scope));
}
fs.writeFileSync(path.join(scratch, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
fs.writeFileSync(
  path.join(scratch, "check.mjs"),
  `import * as sdk from "${pkg.name}";
import { pluginDescriptors } from "./node_modules/${pkg.name}/dist/reflection.js";
const d = pluginDescriptors();
if (!d.fileContainingSymbol("nri.v1beta1.PluginService")) throw new Error("reflection cannot find nri.v1beta1.PluginService");
console.log(JSON.stringify({ version: sdk.VERSION, nri: sdk.NRI_VERSION, protocol: sdk.PROTOCOL }));
`,
);
let got;
try {
  got = JSON.parse(execFileSync("node", ["check.mjs"], { cwd: scratch, encoding: "utf8" }));
} catch (e) {
  problems.push(`the installed package does not import: ${e.stderr ?? e}`);
}
if (got && (got.version !== pkg.version || got.nri !== `typescript-sdk ${got.protocol} nri-grpc/${pkg.version}`)) {
  problems.push(`the installed package reports ${JSON.stringify(got)}, package.json ${pkg.version}`);
}
// A consumer written against the .d.ts (the generated types included).
fs.writeFileSync(
  path.join(scratch, "consumer.ts"),
  `import { Adjustment, Plugin, VERSION, type CreateContainerRequest } from "${pkg.name}";
import type { PodSandbox } from "${pkg.name}/gen/types_pb";
const v: string = VERSION;
const p = new Plugin({ createContainer: (req: CreateContainerRequest) => new Adjustment().addEnv("V", v).response() }, { name: "c", index: "10" });
export const pod: PodSandbox | undefined = undefined;
export { p };
`,
);
fs.writeFileSync(
  path.join(scratch, "tsconfig.json"),
  JSON.stringify({
    compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, types: ["node"] },
    files: ["consumer.ts"],
  }),
);
try {
  execFileSync(path.join(pkgDir, "node_modules", ".bin", "tsc"), ["-p", scratch], { encoding: "utf8" });
} catch (e) {
  problems.push(`a consumer does not type-check against the .d.ts: ${e.stdout ?? e}`);
}

for (const p of problems) console.error(`check-pack: ${path.basename(tarball)}: ${p}`);
if (problems.length) process.exit(1);
console.log(`check-pack: ${path.basename(tarball)}: ok (${files.length} files, ${pkg.name}@${pkg.version}, ${got.nri})`);
