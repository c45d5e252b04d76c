// Event selectors and plugin status: checking them against the protocol's bounds.

import { create, type MessageInitShape } from "@bufbuild/protobuf";

import { type EventSelector, EventSelectorSchema, PluginStatus } from "./gen/nri/v1beta1/types_pb.js";

/** At most this many selectors per registration. */
export const MAX_SELECTORS = 16;
/** At most this many entries in each list of a selector. */
export const MAX_SELECTOR_ENTRIES = 64;
/** At most this many bytes per list entry (namespace, pattern, handler). */
export const MAX_SELECTOR_ENTRY_BYTES = 253;
/** At most this many bytes of a pod label selector. */
export const MAX_POD_LABELS_BYTES = 4096;
/** At most this many bytes of a status or resync reason. */
export const MAX_REASON_BYTES = 1024;

/**
 * An event selector as plugins write it: every field given must match
 * (AND); a list matches when any of its entries does (OR).
 *
 *     { namespaces: ["prod", "staging"], podLabels: "app=web,!canary" }
 *     { containerNames: ["db-*"], runtimeHandlers: ["", "kata"] }
 *
 * podLabels is a Kubernetes label selector; containerNames are patterns
 * ("*" any run of characters, "?" one character); runtimeHandlers are
 * matched exactly ("" is the runtime's default handler).
 */
export type EventSelectorInit = MessageInitShape<typeof EventSelectorSchema>;

/** A UTF-16 surrogate without its pair: a string that has no UTF-8 form. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function utf8Bytes(what: string, s: unknown): number {
  if (typeof s !== "string") throw new Error(`${what} must be a string, not ${typeof s}`);
  if (LONE_SURROGATE.test(s)) throw new Error(`${what} is not valid UTF-8`);
  return Buffer.byteLength(s, "utf8");
}

/**
 * Builds the EventSelector messages of selectors after checking the
 * protocol's bounds: at most 16 selectors, at most 64 entries of at most 253
 * bytes per list, a label selector of at most 4096 bytes, all UTF-8. Throws
 * an Error naming the selector, the field and the rule. nrid checks the label
 * selector's syntax (a bad one refuses the registration with
 * REGISTRATION_REFUSAL_INVALID_SELECTORS).
 */
export function checkSelectors(selectors: readonly EventSelectorInit[]): EventSelector[] {
  if (!Array.isArray(selectors)) throw new Error("selectors must be an array");
  if (selectors.length > MAX_SELECTORS) {
    throw new Error(`selectors: ${selectors.length} selectors, at most ${MAX_SELECTORS} are allowed`);
  }
  return selectors.map((init, i) => {
    if (init === null || typeof init !== "object") throw new Error(`selectors[${i}] is not an object`);
    const lists = { namespaces: init.namespaces, containerNames: init.containerNames, runtimeHandlers: init.runtimeHandlers };
    for (const [name, entries] of Object.entries(lists)) {
      if (entries === undefined) continue;
      if (!Array.isArray(entries)) throw new Error(`selectors[${i}].${name} must be an array of strings`);
      if (entries.length > MAX_SELECTOR_ENTRIES) {
        throw new Error(`selectors[${i}].${name}: ${entries.length} entries, at most ${MAX_SELECTOR_ENTRIES} are allowed`);
      }
      entries.forEach((e, j) => {
        const n = utf8Bytes(`selectors[${i}].${name}[${j}]`, e);
        if (n > MAX_SELECTOR_ENTRY_BYTES) {
          throw new Error(`selectors[${i}].${name}[${j}]: ${n} bytes, at most ${MAX_SELECTOR_ENTRY_BYTES} are allowed`);
        }
      });
    }
    const n = utf8Bytes(`selectors[${i}].podLabels`, init.podLabels ?? "");
    if (n > MAX_POD_LABELS_BYTES) throw new Error(`selectors[${i}].podLabels: ${n} bytes, at most ${MAX_POD_LABELS_BYTES} are allowed`);
    return create(EventSelectorSchema, init);
  });
}

/** A status: PluginStatus.READY, NOT_READY or DEGRADED, or their names. */
export type StatusInit = PluginStatus | "READY" | "NOT_READY" | "DEGRADED";

/** The PluginStatus of s; undefined and UNSPECIFIED mean READY. Throws for anything else. */
export function checkStatus(s: StatusInit | undefined): PluginStatus {
  if (s === undefined || s === PluginStatus.UNSPECIFIED) return PluginStatus.READY;
  if (typeof s === "string") {
    if (s === "READY" || s === "NOT_READY" || s === "DEGRADED") return PluginStatus[s];
    throw new Error(`status "${String(s).slice(0, 32)}" is not one of READY, NOT_READY, DEGRADED`);
  }
  if (s === PluginStatus.READY || s === PluginStatus.NOT_READY || s === PluginStatus.DEGRADED) return s;
  throw new Error(`status ${String(s).slice(0, 32)} is not a PluginStatus (READY, NOT_READY, DEGRADED)`);
}

/** reason ("" for undefined) after checking it is UTF-8 and at most 1024 bytes; throws naming what. */
export function checkReason(what: string, reason: string | undefined): string {
  const r = reason ?? "";
  const n = utf8Bytes(what, r);
  if (n > MAX_REASON_BYTES) throw new Error(`${what}: ${n} bytes, at most ${MAX_REASON_BYTES} are allowed`);
  return r;
}
