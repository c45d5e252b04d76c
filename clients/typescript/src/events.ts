// Events, subscription masks and the names of their handlers.

import { Event } from "./gen/nri/v1beta1/types_pb.js";

/** Every event, validation included (the mask a plugin answering 0 gets). */
export const ALL_EVENTS = 0x3fff;

/** PluginService method name of each event. */
const METHODS: ReadonlyMap<Event, string> = new Map([
  [Event.RUN_POD_SANDBOX, "RunPodSandbox"],
  [Event.STOP_POD_SANDBOX, "StopPodSandbox"],
  [Event.REMOVE_POD_SANDBOX, "RemovePodSandbox"],
  [Event.CREATE_CONTAINER, "CreateContainer"],
  [Event.POST_CREATE_CONTAINER, "PostCreateContainer"],
  [Event.START_CONTAINER, "StartContainer"],
  [Event.POST_START_CONTAINER, "PostStartContainer"],
  [Event.UPDATE_CONTAINER, "UpdateContainer"],
  [Event.POST_UPDATE_CONTAINER, "PostUpdateContainer"],
  [Event.STOP_CONTAINER, "StopContainer"],
  [Event.REMOVE_CONTAINER, "RemoveContainer"],
  [Event.UPDATE_POD_SANDBOX, "UpdatePodSandbox"],
  [Event.POST_UPDATE_POD_SANDBOX, "PostUpdatePodSandbox"],
  [Event.VALIDATE_CONTAINER_ADJUSTMENT, "ValidateContainerAdjustment"],
]);

/** The events, in enum order. */
export const EVENTS: readonly Event[] = [...METHODS.keys()].sort((a, b) => a - b);

/** Handler name of an event: the lowerCamelCase PluginService method ("createContainer"). */
export function handlerName(e: Event): EventHandlerName {
  const m = eventName(e);
  return (m[0].toLowerCase() + m.slice(1)) as EventHandlerName;
}

/** PluginService method name of an event ("CreateContainer"). */
export function eventName(e: Event): string {
  return METHODS.get(e) ?? `Event(${e})`;
}

/** The subscription mask of events: bit 1 << (e - 1) per event. */
export function eventMask(...events: Event[]): number {
  let m = 0;
  for (const e of events) {
    if (METHODS.has(e)) m |= 1 << (e - 1);
  }
  return m;
}

/** The events of a subscription mask, in enum order. */
export function maskEvents(mask: number): Event[] {
  return EVENTS.filter((e) => (mask & (1 << (e - 1))) !== 0);
}

/** The method names of the events of a mask, for logs. */
export function eventNames(mask: number): string[] {
  return maskEvents(mask).map(eventName);
}

/** Handler names of the events. */
export type EventHandlerName =
  | "runPodSandbox"
  | "stopPodSandbox"
  | "removePodSandbox"
  | "createContainer"
  | "postCreateContainer"
  | "startContainer"
  | "postStartContainer"
  | "updateContainer"
  | "postUpdateContainer"
  | "stopContainer"
  | "removeContainer"
  | "updatePodSandbox"
  | "postUpdatePodSandbox"
  | "validateContainerAdjustment";
