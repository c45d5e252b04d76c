// gRPC server reflection (grpc.reflection.v1 and v1alpha), served next to
// PluginService and grpc.health.v1.Health on the plugin's socket, as the Go
// SDK does: grpcurl lists, describes and calls a plugin without a protoset.
//
// No npm package serves reflection with Connect (the ones there are are for
// @grpc/grpc-js), so it is here, small: the descriptors of the two versions
// (the same messages in two packages) are built like health.ts's, and the
// files served are those of nri.v1beta1 with their imports from the
// descriptor set `make generate` writes with source info (the comments;
// protoc-gen-es's embedded descriptors carry none), plus health's and
// reflection's own.

import { create, fromBinary, toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { createFileRegistry, type FileRegistry } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import {
  type FileDescriptorProto,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";

import { descriptorSetBase64 } from "./gen/nri/v1beta1/descriptor_set.js";
import { healthFile } from "./health.js";

/** The reflection services, newest first. */
export const REFLECTION_SERVICES = ["grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"] as const;

/** grpc/reflection/{v1,v1alpha}/reflection.proto: the same file in two packages. */
function reflectionFile(version: "v1" | "v1alpha"): FileDescriptorProto {
  const pkg = `grpc.reflection.${version}`;
  const str = (name: string, number: number, oneof?: number) => ({
    name,
    number,
    type: Type.STRING,
    label: Label.OPTIONAL,
    jsonName: camel(name),
    ...(oneof === undefined ? {} : { oneofIndex: oneof }),
  });
  const msg = (name: string, number: number, typeName: string, oneof?: number, repeated = false) => ({
    name,
    number,
    type: Type.MESSAGE,
    label: repeated ? Label.REPEATED : Label.OPTIONAL,
    typeName: `.${pkg}.${typeName}`,
    jsonName: camel(name),
    ...(oneof === undefined ? {} : { oneofIndex: oneof }),
  });
  const int32 = (name: string, number: number, repeated = false) => ({
    name,
    number,
    type: Type.INT32,
    label: repeated ? Label.REPEATED : Label.OPTIONAL,
    jsonName: camel(name),
  });
  return create(FileDescriptorProtoSchema, {
    name: version === "v1" ? "grpc/reflection/v1/reflection.proto" : "grpc/reflection/v1alpha/reflection.proto",
    package: pkg,
    syntax: "proto3",
    messageType: [
      {
        name: "ServerReflectionRequest",
        field: [
          str("host", 1),
          str("file_by_filename", 3, 0),
          str("file_containing_symbol", 4, 0),
          msg("file_containing_extension", 5, "ExtensionRequest", 0),
          str("all_extension_numbers_of_type", 6, 0),
          str("list_services", 7, 0),
        ],
        oneofDecl: [{ name: "message_request" }],
      },
      { name: "ExtensionRequest", field: [str("containing_type", 1), int32("extension_number", 2)] },
      {
        name: "ServerReflectionResponse",
        field: [
          str("valid_host", 1),
          msg("original_request", 2, "ServerReflectionRequest"),
          msg("file_descriptor_response", 4, "FileDescriptorResponse", 0),
          msg("all_extension_numbers_response", 5, "ExtensionNumberResponse", 0),
          msg("list_services_response", 6, "ListServiceResponse", 0),
          msg("error_response", 7, "ErrorResponse", 0),
        ],
        oneofDecl: [{ name: "message_response" }],
      },
      {
        name: "FileDescriptorResponse",
        field: [{ name: "file_descriptor_proto", number: 1, type: Type.BYTES, label: Label.REPEATED, jsonName: "fileDescriptorProto" }],
      },
      { name: "ExtensionNumberResponse", field: [str("base_type_name", 1), int32("extension_number", 2, true)] },
      { name: "ListServiceResponse", field: [msg("service", 1, "ServiceResponse", undefined, true)] },
      { name: "ServiceResponse", field: [str("name", 1)] },
      { name: "ErrorResponse", field: [int32("error_code", 1), str("error_message", 2)] },
    ],
    service: [
      {
        name: "ServerReflection",
        method: [
          {
            name: "ServerReflectionInfo",
            inputType: `.${pkg}.ServerReflectionRequest`,
            outputType: `.${pkg}.ServerReflectionResponse`,
            clientStreaming: true,
            serverStreaming: true,
          },
        ],
      },
    ],
  });
}

function camel(s: string): string {
  return s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** What reflection answers from: every file by name, serialized, and a registry of their types. */
export class Descriptors {
  private readonly raw = new Map<string, Uint8Array>();
  readonly registry: FileRegistry;

  constructor(files: FileDescriptorProto[]) {
    for (const f of files) this.raw.set(f.name, toBinary(FileDescriptorProtoSchema, f));
    this.registry = createFileRegistry(create(FileDescriptorSetSchema, { file: files }));
  }

  /** The file ("nri/v1beta1/types.proto") and its transitive imports, the file first; undefined when unknown. */
  fileByName(name: string): Uint8Array[] | undefined {
    const file = this.registry.getFile(name);
    if (!file || !this.raw.has(name)) return undefined;
    const seen = new Set<string>();
    const walk = (f: DescFile) => {
      if (seen.has(f.proto.name)) return;
      seen.add(f.proto.name);
      for (const d of f.dependencies) walk(d);
    };
    walk(file);
    return [...seen].map((n) => this.raw.get(n)!);
  }

  /** The file defining a message, enum, service, extension, field, enum value or method. */
  fileContainingSymbol(symbol: string): Uint8Array[] | undefined {
    const t = this.registry.get(symbol);
    if (t) return this.fileByName(t.file.proto.name);
    const dot = symbol.lastIndexOf(".");
    const parent = symbol.slice(0, dot);
    const member = symbol.slice(dot + 1);
    const p = this.registry.get(parent);
    if (p?.kind === "service" && p.methods.some((m) => m.name === member)) return this.fileByName(p.file.proto.name);
    if (p?.kind === "message" && (p.fields.some((f) => f.name === member) || p.oneofs.some((o) => o.name === member))) {
      return this.fileByName(p.file.proto.name);
    }
    // Enum values are scoped like their enum's siblings.
    for (const e of this.registry) {
      if (e.kind === "enum" && e.typeName.slice(0, e.typeName.lastIndexOf(".")) === parent && e.values.some((v) => v.name === member)) {
        return this.fileByName(e.file.proto.name);
      }
    }
    // Packages: "nri" alone is no symbol.
    return undefined;
  }

  fileContainingExtension(extendee: string, no: number): Uint8Array[] | undefined {
    const m = this.registry.getMessage(extendee);
    const x = m && this.registry.getExtensionFor(m, no);
    return x ? this.fileByName(x.file.proto.name) : undefined;
  }

  extensionNumbers(extendee: string): number[] | undefined {
    const m = this.registry.getMessage(extendee);
    if (!m) return undefined;
    const out: number[] = [];
    for (const t of this.registry) if (t.kind === "extension" && t.extendee.typeName === m.typeName) out.push(t.number);
    return out.sort((a, b) => a - b);
  }
}

let descriptors: Descriptors | undefined;
let services: DescService[] | undefined;

/** The files a plugin's reflection serves: nri.v1beta1 with its imports (with comments), health, reflection. */
export function pluginDescriptors(): Descriptors {
  if (!descriptors) {
    const set = fromBinary(FileDescriptorSetSchema, base64Decode(descriptorSetBase64));
    descriptors = new Descriptors([...set.file, healthFile, reflectionFile("v1"), reflectionFile("v1alpha")]);
  }
  return descriptors;
}

function reflectionServices(): DescService[] {
  services ??= REFLECTION_SERVICES.map((name) => pluginDescriptors().registry.getService(name)!);
  return services;
}

type Oneof<T> = { case: undefined; value?: undefined } | T;
interface Request {
  host: string;
  messageRequest: Oneof<
    | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  >;
}

function answer(d: Descriptors, listed: string[], req: Request): unknown {
  const r = req.messageRequest;
  let files: Uint8Array[] | undefined;
  let response: { case: string; value: unknown } | undefined;
  switch (r.case) {
    case "fileByFilename":
      files = d.fileByName(r.value);
      break;
    case "fileContainingSymbol":
      files = d.fileContainingSymbol(r.value);
      break;
    case "fileContainingExtension":
      files = d.fileContainingExtension(r.value.containingType, r.value.extensionNumber);
      break;
    case "allExtensionNumbersOfType": {
      const numbers = d.extensionNumbers(r.value);
      if (numbers) response = { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } };
      break;
    }
    case "listServices":
      response = { case: "listServicesResponse", value: { service: listed.map((name) => ({ name })) } };
      break;
    default:
      response = { case: "errorResponse", value: { errorCode: Code.InvalidArgument, errorMessage: "no request in ServerReflectionRequest" } };
  }
  if (files) response = { case: "fileDescriptorResponse", value: { fileDescriptorProto: files } };
  response ??= {
    case: "errorResponse",
    value: { errorCode: Code.NotFound, errorMessage: `${r.case ?? "request"} ${JSON.stringify(r.value)}: not found` },
  };
  return { validHost: req.host, originalRequest: req, messageResponse: response };
}

/**
 * Adds grpc.reflection.v1 and v1alpha to router; ListServices answers
 * `services` and reflection itself, sorted.
 */
export function addReflection(router: ConnectRouter, services: string[]): void {
  const d = pluginDescriptors();
  const listed = [...new Set([...services, ...REFLECTION_SERVICES])].sort();
  for (const svc of reflectionServices()) {
    const output = svc.methods[0].output;
    router.service(svc, {
      async *serverReflectionInfo(reqs: AsyncIterable<Request>) {
        for await (const req of reqs) yield create(output, answer(d, listed, req) as never);
      },
    } as never);
  }
}
