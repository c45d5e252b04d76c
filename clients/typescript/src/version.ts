// The SDK's version comes from one place, package.json (the version npm pack
// writes into the tarball's name and metadata), read at run time: the module
// is dist/version.js, so ../package.json is the package's own.

import { createRequire } from "node:module";

const pkg = createRequire(import.meta.url)("../package.json") as { name: string; version: string };
if (pkg.name !== "@nri-grpc/plugin") throw new Error(`@nri-grpc/plugin: ../package.json of ${import.meta.url} is ${pkg.name}'s`);

/** Version of the SDK: package.json's "version". */
export const VERSION: string = pkg.version;

/** The NRI protocol the SDK speaks: its proto package is `nri.` + PROTOCOL. */
export const PROTOCOL = "v1beta1";

/**
 * What the SDK registers as RegisterPluginRequest.nri_version (shown by
 * `nrictl plugins`): "typescript-sdk v1beta1 nri-grpc/0.1.0", the form of the
 * Go and Rust SDKs.
 */
export const NRI_VERSION = `typescript-sdk ${PROTOCOL} nri-grpc/${VERSION}`;
