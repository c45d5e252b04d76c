"""gRPC server reflection on the plugin's endpoint, with the proto comments.

The plugin serves ``grpc.reflection.v1.ServerReflection`` and
``grpc.reflection.v1alpha.ServerReflection`` next to PluginService and
``grpc.health.v1.Health``, as the Go SDK does, so that grpcurl can list,
describe and call a plugin without a protoset::

    grpcurl -plaintext -unix /var/run/nri/plugins/10-hello.sock describe nri.v1beta1.PluginService

grpcio-reflection's own servicer cannot be used as it is: it serves the files
of a descriptor pool re-serialized from upb's definitions, which keep no
source info, so ``describe`` would print no comments; and it speaks only
v1alpha. This servicer serves the bytes of the files as generated instead:
nri.v1beta1 and its imports from ``nri.binpb`` (the FileDescriptorSet that
``make generate`` writes with source info, shipped in the package), health
and reflection from their generated modules. Its messages are
grpcio-reflection's; v1 and v1alpha are the same messages in another package.
"""

from __future__ import annotations

from importlib import resources
from typing import AsyncIterator, Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2 as rpb
from grpc_reflection.v1alpha import reflection_pb2_grpc as rpb_grpc

#: The service names of reflection, in both versions.
SERVICE_V1 = "grpc.reflection.v1.ServerReflection"
SERVICE_V1ALPHA = "grpc.reflection.v1alpha.ServerReflection"
SERVICE_NAMES = (SERVICE_V1, SERVICE_V1ALPHA)

_PROTOSET_PACKAGE = "nri_grpc.gen.nri.v1beta1"
_PROTOSET = "nri.binpb"


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    """The FileDescriptorSet of nri.v1beta1 and its imports, with the proto
    comments (what ``grpcurl -protoset`` reads too)."""
    data = resources.files(_PROTOSET_PACKAGE).joinpath(_PROTOSET).read_bytes()
    return descriptor_pb2.FileDescriptorSet.FromString(data)


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """grpc/reflection/v1/reflection.proto: v1alpha's file in package
    grpc.reflection.v1 (the two versions differ in nothing else)."""
    f = descriptor_pb2.FileDescriptorProto.FromString(rpb.DESCRIPTOR.serialized_pb)
    old, new = ".grpc.reflection.v1alpha.", ".grpc.reflection.v1."
    f.name = "grpc/reflection/v1/reflection.proto"
    f.package = "grpc.reflection.v1"
    f.options.Clear()
    f.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    f.options.java_package = "io.grpc.reflection.v1"
    f.options.java_multiple_files = True
    f.options.java_outer_classname = "ServerReflectionProto"
    for m in f.message_type:
        for fld in m.field:
            if fld.type_name.startswith(old):
                fld.type_name = new + fld.type_name[len(old) :]
    for s in f.service:
        for meth in s.method:
            meth.input_type = new + meth.input_type[len(old) :]
            meth.output_type = new + meth.output_type[len(old) :]
    return f


class Descriptors:
    """The files reflection serves, by name, as serialized, and a pool to
    find the file that defines a symbol."""

    def __init__(self, files: Iterable[descriptor_pb2.FileDescriptorProto]) -> None:
        self._raw: dict[str, bytes] = {}
        self._deps: dict[str, list[str]] = {}
        self._pool = descriptor_pool.DescriptorPool()
        todo = list(files)
        # The pool takes a file after its imports.
        while todo:
            ready = [f for f in todo if all(d in self._raw for d in f.dependency)]
            rest = [f for f in todo if not all(d in self._raw for d in f.dependency)]
            if not ready:
                missing = sorted({d for f in rest for d in f.dependency if d not in self._raw})
                raise ValueError(f"reflection: imports missing from the descriptor set: {', '.join(missing)}")
            for f in ready:
                if f.name in self._raw:
                    continue
                self._raw[f.name] = f.SerializeToString()
                self._deps[f.name] = list(f.dependency)
                self._pool.Add(f)
            todo = rest

    def file_by_name(self, name: str) -> list[bytes]:
        """The file and its transitive imports, the file first; KeyError when unknown."""
        if name not in self._raw:
            raise KeyError(name)
        out: list[str] = []
        stack = [name]
        while stack:
            n = stack.pop()
            if n in out:
                continue
            out.append(n)
            stack.extend(reversed(self._deps[n]))
        return [self._raw[n] for n in out]

    def file_containing_symbol(self, symbol: str) -> list[bytes]:
        """The file defining a message, enum, service, field or method (and
        its imports); KeyError when none does."""
        try:
            return self.file_by_name(self._pool.FindFileContainingSymbol(symbol).name)
        except KeyError:
            parent, _, member = symbol.rpartition(".")
            svc = self._pool.FindServiceByName(parent)  # KeyError when none
            if member not in svc.methods_by_name:
                raise
            return self.file_by_name(svc.file.name)

    def file_containing_extension(self, containing_type: str, number: int) -> list[bytes]:
        msg = self._pool.FindMessageTypeByName(containing_type)
        ext = self._pool.FindExtensionByNumber(msg, number)
        return self.file_by_name(ext.file.name)

    def extension_numbers(self, containing_type: str) -> tuple[str, list[int]]:
        msg = self._pool.FindMessageTypeByName(containing_type)
        return msg.full_name, sorted(e.number for e in self._pool.FindAllExtensions(msg))


def plugin_descriptors() -> Descriptors:
    """The files of a plugin's endpoint: nri.v1beta1 with its imports (with
    comments), grpc.health.v1, and reflection v1 and v1alpha."""
    files = list(descriptor_set().file)
    files.append(descriptor_pb2.FileDescriptorProto.FromString(health_pb2.DESCRIPTOR.serialized_pb))
    files.append(descriptor_pb2.FileDescriptorProto.FromString(rpb.DESCRIPTOR.serialized_pb))
    files.append(_v1_file())
    return Descriptors(files)


class ReflectionServicer(rpb_grpc.ServerReflectionServicer):
    """ServerReflectionInfo over Descriptors, listing service_names."""

    def __init__(self, service_names: Iterable[str], descriptors: Descriptors) -> None:
        self._services = sorted(set(service_names) | set(SERVICE_NAMES))
        self._d = descriptors

    def _answer(self, req: rpb.ServerReflectionRequest) -> rpb.ServerReflectionResponse:
        rsp = rpb.ServerReflectionResponse(valid_host=req.host, original_request=req)
        kind = req.WhichOneof("message_request")
        try:
            if kind == "file_by_filename":
                files = self._d.file_by_name(req.file_by_filename)
            elif kind == "file_containing_symbol":
                files = self._d.file_containing_symbol(req.file_containing_symbol)
            elif kind == "file_containing_extension":
                x = req.file_containing_extension
                files = self._d.file_containing_extension(x.containing_type, x.extension_number)
            elif kind == "all_extension_numbers_of_type":
                base, numbers = self._d.extension_numbers(req.all_extension_numbers_of_type)
                rsp.all_extension_numbers_response.base_type_name = base
                rsp.all_extension_numbers_response.extension_number.extend(numbers)
                return rsp
            elif kind == "list_services":
                rsp.list_services_response.service.extend(rpb.ServiceResponse(name=n) for n in self._services)
                return rsp
            else:
                rsp.error_response.error_code = grpc.StatusCode.INVALID_ARGUMENT.value[0]
                rsp.error_response.error_message = "no request in ServerReflectionRequest"
                return rsp
        except KeyError:
            what = str(getattr(req, kind)).replace("\n", " ").strip()
            rsp.error_response.error_code = grpc.StatusCode.NOT_FOUND.value[0]
            rsp.error_response.error_message = f"{kind.replace('_', ' ')} {what}: not found"
            return rsp
        rsp.file_descriptor_response.file_descriptor_proto.extend(files)
        return rsp

    async def ServerReflectionInfo(  # noqa: N802 - gRPC names
        self, request_iterator: AsyncIterator[rpb.ServerReflectionRequest], context: object
    ) -> AsyncIterator[rpb.ServerReflectionResponse]:
        async for req in request_iterator:
            yield self._answer(req)


def add_to_server(server: grpc.aio.Server, service_names: Iterable[str]) -> None:
    """Serves reflection v1 and v1alpha on server, listing service_names (and
    reflection itself)."""
    servicer = ReflectionServicer(service_names, plugin_descriptors())
    rpb_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    # v1: the same handler under the other name (the messages are identical
    # on the wire).
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=rpb.ServerReflectionRequest.FromString,
        response_serializer=rpb.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_V1, {"ServerReflectionInfo": handler}),))
