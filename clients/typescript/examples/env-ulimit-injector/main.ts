// env-ulimit-injector: sets environment variables and ulimits of containers
// as pod annotations ask. An example plugin of the nri-grpc TypeScript SDK.
//
// Annotations (the most specific wins: KEY/container.<container name>, then
// KEY/pod, then KEY), values in JSON:
//
//   env.noderesource.dev      {"NAME": "value", "-DROP": ""}   a "-NAME" key removes NAME
//   ulimits.noderesource.dev  [{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 4096}]
//
// A malformed annotation vetoes the container (INVALID_ARGUMENT). The
// drop-in configuration (ConfigureRequest.config, for a plugin nrid
// launches) may hold JSON defaults: {"env": {"NAME": "value"}}, applied to
// every container before the annotations.

import { parseArgs } from "node:util";

import {
  Adjustment,
  Code,
  ConnectError,
  Plugin,
  RegistrationRefusedError,
  run,
  type CallContext,
  type ConfigureRequest,
  type CreateContainerRequest,
  type Handlers,
} from "@nri-grpc/plugin";

const ENV_KEY = "env.noderesource.dev";
const ULIMITS_KEY = "ulimits.noderesource.dev";
const RLIMITS = new Set(["AS", "CORE", "CPU", "DATA", "FSIZE", "LOCKS", "MEMLOCK", "MSGQUEUE", "NICE", "NOFILE", "NPROC", "RSS", "RTPRIO", "RTTIME", "SIGPENDING", "STACK"]);

/** The value of key for a container: container-scoped, then pod-wide. */
export function effectiveAnnotation(annotations: Record<string, string>, key: string, container: string): string | undefined {
  for (const k of [`${key}/container.${container}`, `${key}/pod`, key]) {
    if (k in annotations) return annotations[k];
  }
  return undefined;
}

export function parseEnv(value: string): Record<string, string> {
  const env: unknown = JSON.parse(value);
  if (typeof env !== "object" || env === null || Array.isArray(env) || !Object.values(env).every((v) => typeof v === "string")) {
    throw new Error("must be a JSON object of strings");
  }
  return env as Record<string, string>;
}

export function parseUlimits(value: string): [string, number, number][] {
  const items: unknown = JSON.parse(value);
  if (!Array.isArray(items)) throw new Error("must be a JSON list");
  return items.map((item) => {
    if (typeof item?.type !== "string") throw new Error(`${JSON.stringify(item)}: needs a type`);
    const type = item.type.toUpperCase().replace(/^RLIMIT_/, "");
    if (!RLIMITS.has(type)) throw new Error(`unknown ulimit type "${item.type}"`);
    const soft = item.soft ?? 0;
    const hard = item.hard ?? 0;
    if (!Number.isSafeInteger(soft) || !Number.isSafeInteger(hard) || soft < 0 || hard < 0) {
      throw new Error(`${item.type}: soft and hard must be non-negative integers`);
    }
    if (soft > hard) throw new Error(`${item.type}: soft limit ${soft} is above the hard limit ${hard}`);
    return ["RLIMIT_" + type, hard, soft];
  });
}

export class Injector implements Handlers {
  defaults: Record<string, string> = {};

  configure(req: ConfigureRequest) {
    if (req.config.trim()) this.defaults = parseEnv(JSON.stringify(JSON.parse(req.config).env ?? {}));
    console.error(`configured by ${req.runtimeName} ${req.runtimeVersion} on node ${req.nodeName}; defaults ${JSON.stringify(this.defaults)}`);
  }

  createContainer(req: CreateContainerRequest, _ctx: CallContext) {
    const name = req.container?.name ?? "";
    const annotations = req.pod?.annotations ?? {};
    const adjust = new Adjustment();
    try {
      const env = { ...this.defaults };
      const e = effectiveAnnotation(annotations, ENV_KEY, name);
      if (e !== undefined) Object.assign(env, parseEnv(e));
      for (const [k, v] of Object.entries(env)) {
        if (k.startsWith("-")) adjust.removeEnv(k.slice(1));
        else adjust.addEnv(k, v);
      }
      const u = effectiveAnnotation(annotations, ULIMITS_KEY, name);
      if (u !== undefined) for (const [type, hard, soft] of parseUlimits(u)) adjust.addRlimit(type, hard, soft);
    } catch (err) {
      throw new ConnectError(`container ${name}: ${(err as Error).message}`, Code.InvalidArgument);
    }
    return adjust.response();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      name: { type: "string", default: "env-ulimit-injector" },
      idx: { type: "string", default: "30" },
      server: { type: "string" },
      endpoint: { type: "string" },
    },
  });
  const plugin = new Plugin(new Injector(), {
    name: values.name,
    index: values.idx,
    serverAddress: values.server,
    endpoint: values.endpoint,
    pluginVersion: "0.1.0",
  });
  try {
    await run(plugin);
  } catch (e) {
    if (e instanceof RegistrationRefusedError) console.error(e.message);
    else throw e;
  }
}

await main();
