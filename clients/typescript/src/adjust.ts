// Builders of adjustments and container updates, with classic NRI's removal
// markers (docs/PROTOCOL.md section 9).

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type ContainerAdjustment,
  ContainerAdjustmentSchema,
  type ContainerEviction,
  ContainerEvictionSchema,
  type ContainerUpdate,
  ContainerUpdateSchema,
  HooksSchema,
  type Hooks,
  type LinuxContainerAdjustment,
  LinuxContainerAdjustmentSchema,
  LinuxContainerUpdateSchema,
  LinuxCPUSchema,
  type LinuxCPU,
  type LinuxDevice,
  LinuxDeviceSchema,
  type LinuxDeviceCgroup,
  LinuxDeviceCgroupSchema,
  type LinuxIOPriority,
  LinuxIOPrioritySchema,
  LinuxMemoryPolicySchema,
  LinuxMemorySchema,
  type LinuxMemory,
  type LinuxNamespace,
  LinuxNamespaceSchema,
  type LinuxNetDevice,
  LinuxNetDeviceSchema,
  LinuxPidsSchema,
  LinuxRdtSchema,
  type LinuxRdt,
  type LinuxResources,
  LinuxResourcesSchema,
  type LinuxScheduler,
  LinuxSchedulerSchema,
  type LinuxSeccomp,
  LinuxSeccompSchema,
  type Mount,
  MountSchema,
  type MpolFlag,
  type MpolMode,
  OptionalRepeatedStringSchema,
} from "./gen/nri/v1beta1/types_pb.js";
import {
  type CreateContainerResponse,
  CreateContainerResponseSchema,
} from "./gen/nri/v1beta1/plugin_service_pb.js";

/** An integer for an int64 or uint64 field. */
export type Int = number | bigint;

/** Returns key with the removal marker: "-" + key. */
export function markForRemoval(key: string): string {
  return "-" + key;
}

/** Returns key without the removal marker, and whether it had one. */
export function isMarkedForRemoval(key: string): [string, boolean] {
  return key.startsWith("-") ? [key.slice(1), true] : [key, false];
}

/** Returns an eviction of containerId, for the evict lists of responses and for Plugin.updateContainers. */
export function evict(containerId: string, reason: string): ContainerEviction {
  return create(ContainerEvictionSchema, { containerId, reason });
}

function msg<T>(schema: Parameters<typeof create>[0], init: unknown): T {
  return create(schema, init as never) as T;
}

/** Setters of LinuxResources fields shared by Adjustment and Update. */
abstract class ResourcesBuilder<Self> {
  protected abstract resources(): LinuxResources;

  private memory(): LinuxMemory {
    const r = this.resources();
    return (r.memory ??= create(LinuxMemorySchema));
  }

  private cpu(): LinuxCPU {
    const r = this.resources();
    return (r.cpu ??= create(LinuxCPUSchema));
  }

  private self(): Self {
    return this as unknown as Self;
  }

  /** Sets the memory limit in bytes. */
  setLinuxMemoryLimit(v: Int): Self {
    this.memory().limit = BigInt(v);
    return this.self();
  }
  /** Sets the memory soft limit in bytes. */
  setLinuxMemoryReservation(v: Int): Self {
    this.memory().reservation = BigInt(v);
    return this.self();
  }
  /** Sets the memory plus swap limit in bytes. */
  setLinuxMemorySwap(v: Int): Self {
    this.memory().swap = BigInt(v);
    return this.self();
  }
  /** Sets the kernel memory limit (cgroup v1). */
  setLinuxMemoryKernel(v: Int): Self {
    this.memory().kernel = BigInt(v);
    return this.self();
  }
  /** Sets the kernel TCP memory limit (cgroup v1). */
  setLinuxMemoryKernelTCP(v: Int): Self {
    this.memory().kernelTcp = BigInt(v);
    return this.self();
  }
  /** Sets the swappiness (0 to 100). */
  setLinuxMemorySwappiness(v: Int): Self {
    this.memory().swappiness = BigInt(v);
    return this.self();
  }
  /** Disables the OOM killer (cgroup v1). */
  setLinuxMemoryDisableOomKiller(): Self {
    this.memory().disableOomKiller = true;
    return this.self();
  }
  /** Enables hierarchical memory accounting (cgroup v1). */
  setLinuxMemoryUseHierarchy(): Self {
    this.memory().useHierarchy = true;
    return this.self();
  }
  /** Sets the CPU shares. */
  setLinuxCPUShares(v: Int): Self {
    this.cpu().shares = BigInt(v);
    return this.self();
  }
  /** Sets the CFS quota in microseconds (-1: unlimited). */
  setLinuxCPUQuota(v: Int): Self {
    this.cpu().quota = BigInt(v);
    return this.self();
  }
  /** Sets the CFS period in microseconds. */
  setLinuxCPUPeriod(v: Int): Self {
    this.cpu().period = BigInt(v);
    return this.self();
  }
  /** Sets the realtime runtime in microseconds. */
  setLinuxCPURealtimeRuntime(v: Int): Self {
    this.cpu().realtimeRuntime = BigInt(v);
    return this.self();
  }
  /** Sets the realtime period in microseconds. */
  setLinuxCPURealtimePeriod(v: Int): Self {
    this.cpu().realtimePeriod = BigInt(v);
    return this.self();
  }
  /** Sets the allowed CPUs ("0-3,6"). */
  setLinuxCPUSetCPUs(v: string): Self {
    this.cpu().cpus = v;
    return this.self();
  }
  /** Sets the allowed memory nodes. */
  setLinuxCPUSetMems(v: string): Self {
    this.cpu().mems = v;
    return this.self();
  }
  /** Sets the pids limit. */
  setLinuxPidLimits(v: Int): Self {
    this.resources().pids = create(LinuxPidsSchema, { limit: BigInt(v) });
    return this.self();
  }
  /** Sets the limit of one huge page size ("2MB"). */
  addLinuxHugepageLimit(pageSize: string, v: Int): Self {
    this.resources().hugepageLimits.push({ $typeName: "nri.v1beta1.HugepageLimit", pageSize, limit: BigInt(v) });
    return this.self();
  }
  /** Sets the block I/O class. */
  setLinuxBlockIOClass(v: string): Self {
    this.resources().blockioClass = v;
    return this.self();
  }
  /** Sets the RDT class. */
  setLinuxRDTClass(v: string): Self {
    this.resources().rdtClass = v;
    return this.self();
  }
  /** Sets a cgroup v2 unified setting ("memory.high"). */
  addLinuxUnified(key: string, value: string): Self {
    this.resources().unified[key] = value;
    return this.self();
  }
}

/**
 * Builds the ContainerAdjustment a createContainer handler returns. The
 * methods have the names of classic NRI's Go helpers in lowerCamelCase
 * (AddEnv -> addEnv) and return the builder, so calls chain:
 *
 *     return new Adjustment().removeEnv("PROXY").addEnv("PROXY", "http://p:3128").response();
 *
 * A key, path, name or type prefixed with "-" asks nrid to remove that entry,
 * whether the runtime or an earlier plugin set it; to override an earlier
 * plugin's value, remove it and set it again in the same adjustment.
 */
export class Adjustment extends ResourcesBuilder<Adjustment> {
  /** The adjustment built so far (not a copy). */
  readonly proto: ContainerAdjustment;

  /** Starts an empty adjustment, or adds to an existing one. */
  constructor(adjust?: ContainerAdjustment) {
    super();
    this.proto = adjust ?? create(ContainerAdjustmentSchema);
  }

  /** A CreateContainerResponse with this adjustment, and updates of other containers and evictions if given. */
  response(update: (ContainerUpdate | Update)[] = [], evictions: ContainerEviction[] = []): CreateContainerResponse {
    return create(CreateContainerResponseSchema, {
      adjust: this.proto,
      update: update.map((u) => (u instanceof Update ? u.proto : u)),
      evict: evictions,
    });
  }

  private linux(): LinuxContainerAdjustment {
    return (this.proto.linux ??= create(LinuxContainerAdjustmentSchema));
  }

  protected resources(): LinuxResources {
    const l = this.linux();
    return (l.resources ??= create(LinuxResourcesSchema));
  }

  private rdt(): LinuxRdt {
    const l = this.linux();
    return (l.rdt ??= create(LinuxRdtSchema));
  }

  /** Sets the annotation key to value. */
  addAnnotation(key: string, value: string): this {
    this.proto.annotations[key] = value;
    return this;
  }
  /** Removes the annotation key. */
  removeAnnotation(key: string): this {
    this.proto.annotations[markForRemoval(key)] = "";
    return this;
  }
  /** Adds a mount, replacing any mount at the same destination. */
  addMount(m: MessageInitShape<typeof MountSchema> | Mount): this {
    this.proto.mounts.push(msg<Mount>(MountSchema, m));
    return this;
  }
  /** Removes the mount at destination. */
  removeMount(destination: string): this {
    this.proto.mounts.push(create(MountSchema, { destination: markForRemoval(destination) }));
    return this;
  }
  /** Sets the environment variable key to value. */
  addEnv(key: string, value: string): this {
    this.proto.env.push({ $typeName: "nri.v1beta1.KeyValue", key, value });
    return this;
  }
  /** Removes the environment variable key. */
  removeEnv(key: string): this {
    this.proto.env.push({ $typeName: "nri.v1beta1.KeyValue", key: markForRemoval(key), value: "" });
    return this;
  }
  /** Replaces the process arguments. Conflicts with an earlier plugin that set them; see updateArgs. */
  setArgs(args: string[]): this {
    this.proto.args = [...args];
    return this;
  }
  /** Replaces the process arguments, overriding those an earlier plugin set (sent after an empty first element). */
  updateArgs(args: string[]): this {
    this.proto.args = ["", ...args];
    return this;
  }
  /** Appends OCI hooks. Hooks accumulate across plugins and never conflict. */
  addHooks(h: MessageInitShape<typeof HooksSchema> | Hooks): this {
    const add = msg<Hooks>(HooksSchema, h);
    const t = (this.proto.hooks ??= create(HooksSchema));
    t.prestart.push(...add.prestart);
    t.createRuntime.push(...add.createRuntime);
    t.createContainer.push(...add.createContainer);
    t.startContainer.push(...add.startContainer);
    t.poststart.push(...add.poststart);
    t.poststop.push(...add.poststop);
    return this;
  }
  /** Sets the POSIX resource limit type ("RLIMIT_NOFILE"). */
  addRlimit(type: string, hard: Int, soft: Int): this {
    this.proto.rlimits.push({ $typeName: "nri.v1beta1.POSIXRlimit", type, hard: BigInt(hard), soft: BigInt(soft) });
    return this;
  }
  /** Adds a device node, replacing any device at the same path. */
  addDevice(d: MessageInitShape<typeof LinuxDeviceSchema> | LinuxDevice): this {
    this.linux().devices.push(msg<LinuxDevice>(LinuxDeviceSchema, d));
    return this;
  }
  /** Removes the device node at path. */
  removeDevice(path: string): this {
    this.linux().devices.push(create(LinuxDeviceSchema, { path: markForRemoval(path) }));
    return this;
  }
  /** Injects a CDI device ("vendor.com/class=name"). */
  addCDIDevice(name: string): this {
    this.proto.cdiDevices.push({ $typeName: "nri.v1beta1.CDIDevice", name });
    return this;
  }
  /** Adds a namespace, replacing any of the same type. */
  addOrReplaceNamespace(ns: MessageInitShape<typeof LinuxNamespaceSchema> | LinuxNamespace): this {
    this.linux().namespaces.push(msg<LinuxNamespace>(LinuxNamespaceSchema, ns));
    return this;
  }
  /** Removes the namespace of the type ("network"). */
  removeNamespace(type: string): this {
    this.linux().namespaces.push(create(LinuxNamespaceSchema, { type: markForRemoval(type) }));
    return this;
  }
  /** Moves the host network interface hostDev into the container, as d. */
  addLinuxNetDevice(hostDev: string, d: MessageInitShape<typeof LinuxNetDeviceSchema> | LinuxNetDevice): this {
    this.linux().netDevices[hostDev] = msg<LinuxNetDevice>(LinuxNetDeviceSchema, d);
    return this;
  }
  /** Removes the net device entry of hostDev. */
  removeLinuxNetDevice(hostDev: string): this {
    this.linux().netDevices[markForRemoval(hostDev)] = create(LinuxNetDeviceSchema);
    return this;
  }
  /** Sets the namespaced sysctl key. */
  setLinuxSysctl(key: string, value: string): this {
    this.linux().sysctl[key] = value;
    return this;
  }
  /** Removes the sysctl key. */
  removeLinuxSysctl(key: string): this {
    this.linux().sysctl[markForRemoval(key)] = "";
    return this;
  }
  /** Sets the NUMA memory policy. */
  setLinuxMemoryPolicy(mode: MpolMode, nodes: string, ...flags: MpolFlag[]): this {
    this.linux().memoryPolicy = create(LinuxMemoryPolicySchema, { mode, nodes, flags });
    return this;
  }
  /** Appends a device cgroup rule (rules never conflict). */
  addLinuxDeviceCgroup(rule: MessageInitShape<typeof LinuxDeviceCgroupSchema> | LinuxDeviceCgroup): this {
    this.resources().devices.push(msg<LinuxDeviceCgroup>(LinuxDeviceCgroupSchema, rule));
    return this;
  }
  /** Sets the cgroups path. */
  setLinuxCgroupsPath(v: string): this {
    this.linux().cgroupsPath = v;
    return this;
  }
  /** Sets the OOM score adjustment. */
  setLinuxOomScoreAdj(v: Int): this {
    this.linux().oomScoreAdj = BigInt(v);
    return this;
  }
  /** Sets the I/O priority. */
  setLinuxIOPriority(p: MessageInitShape<typeof LinuxIOPrioritySchema> | LinuxIOPriority): this {
    this.linux().ioPriority = msg<LinuxIOPriority>(LinuxIOPrioritySchema, p);
    return this;
  }
  /** Sets the seccomp policy. */
  setLinuxSeccompPolicy(s: MessageInitShape<typeof LinuxSeccompSchema> | LinuxSeccomp): this {
    this.linux().seccompPolicy = msg<LinuxSeccomp>(LinuxSeccompSchema, s);
    return this;
  }
  /** Sets the scheduling attributes. */
  setLinuxScheduler(s: MessageInitShape<typeof LinuxSchedulerSchema> | LinuxScheduler): this {
    this.linux().scheduler = msg<LinuxScheduler>(LinuxSchedulerSchema, s);
    return this;
  }
  /** Sets the RDT class of service ID. */
  setLinuxRDTClosID(v: string): this {
    this.rdt().closId = v;
    return this;
  }
  /** Sets the RDT schemata lines. */
  setLinuxRDTSchemata(v: string[]): this {
    this.rdt().schemata = create(OptionalRepeatedStringSchema, { value: [...v] });
    return this;
  }
  /** Enables or disables RDT monitoring. */
  setLinuxRDTEnableMonitoring(v: boolean): this {
    this.rdt().enableMonitoring = v;
    return this;
  }
  /** Removes every RDT setting of the runtime or earlier plugins before this adjustment's own RDT settings apply. */
  removeLinuxRDT(): this {
    this.rdt().remove = true;
    return this;
  }
}

/**
 * Builds a ContainerUpdate: a change of the resources of an existing
 * container, for the update lists of CreateContainer, UpdateContainer,
 * StopContainer and Synchronize responses and for Plugin.updateContainers.
 */
export class Update extends ResourcesBuilder<Update> {
  /** The update built so far (not a copy). */
  readonly proto: ContainerUpdate;

  /** Starts an update of the container with this id, or adds to an existing update. */
  constructor(container: string | ContainerUpdate) {
    super();
    this.proto = typeof container === "string" ? create(ContainerUpdateSchema, { containerId: container }) : container;
  }

  protected resources(): LinuxResources {
    const l = (this.proto.linux ??= create(LinuxContainerUpdateSchema));
    return (l.resources ??= create(LinuxResourcesSchema));
  }

  /** Sets the id of the container to update. */
  setContainerId(id: string): this {
    this.proto.containerId = id;
    return this;
  }
  /** Ignores a failure to apply this update (and drops it instead of failing the event on a merge conflict). */
  setIgnoreFailure(): this {
    this.proto.ignoreFailure = true;
    return this;
  }
  /** Replaces the resources to set. */
  setLinuxResources(r: MessageInitShape<typeof LinuxResourcesSchema> | LinuxResources): this {
    const l = (this.proto.linux ??= create(LinuxContainerUpdateSchema));
    l.resources = msg<LinuxResources>(LinuxResourcesSchema, r);
    return this;
  }
}
