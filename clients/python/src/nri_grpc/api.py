"""The nri.v1beta1 messages and enums, in one namespace.

Every message, enum and enum value of the generated modules in
``nri_grpc.gen.nri.v1beta1`` (types, PluginService, RuntimeService and
AdaptationService), re-exported so plugins write ``api.CreateContainerRequest``
or ``api.EVENT_CREATE_CONTAINER`` without knowing which .proto file defines
it::

    from nri_grpc import api

    api.ContainerAdjustment(env=[api.KeyValue(key="A", value="1")])

The generated modules themselves (messages in ``*_pb2``, gRPC stubs in
``*_pb2_grpc``) are importable too, for example to call AdaptationService.
"""

# ruff: noqa: F401, F403
from .gen.nri.v1beta1.types_pb2 import *
from .gen.nri.v1beta1.plugin_service_pb2 import *
from .gen.nri.v1beta1.runtime_service_pb2 import *
from .gen.nri.v1beta1.adaptation_service_pb2 import *
from .gen.nri.v1beta1 import (
    adaptation_service_pb2,
    adaptation_service_pb2_grpc,
    plugin_service_pb2,
    plugin_service_pb2_grpc,
    runtime_service_pb2,
    runtime_service_pb2_grpc,
    types_pb2,
)
