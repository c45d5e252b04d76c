// grpc.health.v1.Health, served next to PluginService on the plugin's socket
// (docs/PROTOCOL.md section 2: operators and probes use it). There is no npm
// package with its generated code for protobuf-es v2 that this project can
// install, so its descriptor is built here from the four definitions of
// grpc/health/v1/health.proto.

import { create, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { createFileRegistry } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

/** grpc/health/v1/health.proto, as reflection serves it. */
export const healthFile = create(FileDescriptorProtoSchema, {
  name: "grpc/health/v1/health.proto",
  package: "grpc.health.v1",
  syntax: "proto3",
  messageType: [
    {
      name: "HealthCheckRequest",
      field: [{ name: "service", number: 1, type: FieldDescriptorProto_Type.STRING, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: "service" }],
    },
    {
      name: "HealthCheckResponse",
      field: [
        {
          name: "status",
          number: 1,
          type: FieldDescriptorProto_Type.ENUM,
          label: FieldDescriptorProto_Label.OPTIONAL,
          typeName: ".grpc.health.v1.HealthCheckResponse.ServingStatus",
          jsonName: "status",
        },
      ],
      enumType: [
        {
          name: "ServingStatus",
          value: [
            { name: "UNKNOWN", number: 0 },
            { name: "SERVING", number: 1 },
            { name: "NOT_SERVING", number: 2 },
            { name: "SERVICE_UNKNOWN", number: 3 },
          ],
        },
      ],
    },
  ],
  service: [
    {
      name: "Health",
      method: [
        { name: "Check", inputType: ".grpc.health.v1.HealthCheckRequest", outputType: ".grpc.health.v1.HealthCheckResponse" },
        {
          name: "Watch",
          inputType: ".grpc.health.v1.HealthCheckRequest",
          outputType: ".grpc.health.v1.HealthCheckResponse",
          serverStreaming: true,
        },
      ],
    },
  ],
});

const registry = createFileRegistry(healthFile, () => undefined);

/** The grpc.health.v1.Health service. */
export const HealthService: DescService = registry.getService("grpc.health.v1.Health")!;
/** grpc.health.v1.HealthCheckResponse. */
export const HealthCheckResponseSchema: DescMessage = registry.getMessage("grpc.health.v1.HealthCheckResponse")!;

/** grpc.health.v1.HealthCheckResponse.ServingStatus values. */
export const ServingStatus = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } as const;
