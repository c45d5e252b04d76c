"""The SDK's version: the one place it is written.

``pyproject.toml`` reads ``__version__`` for the package metadata (the wheel's
version), ``nri_grpc.__version__`` is this value, and the plugin registers
with nrid as ``python-sdk PROTOCOL nri-grpc/VERSION`` (RegisterPluginRequest
.nri_version, shown by ``nrictl plugins``), the form the Go and Rust SDKs use.
"""

#: Version of the nri-grpc Python SDK. Bumped with the protocol: a new proto
#: package (nri.v1beta1 -> nri.v1) is a new minor version at least.
__version__ = "0.1.0"

#: The NRI protocol version the SDK speaks: the proto package is
#: ``nri.`` + PROTOCOL (nri_grpc.gen.nri.v1beta1).
PROTOCOL = "v1beta1"
