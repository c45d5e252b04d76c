"""nri_grpc: the Python SDK for nri-grpc plugins.

nri-grpc is containerd's Node Resource Interface (NRI) as a gRPC service. A
plugin is an object whose methods handle the events it wants; Plugin serves
PluginService on the plugin's unix socket, registers with nrid, holds the
registration session, checks instance ids, re-registers when nrid restarts,
collects Synchronize pages, and handles resync and Shutdown (see
docs/PROTOCOL.md)::

    import nri_grpc
    from nri_grpc import Adjustment, api

    class Hello:
        async def create_container(self, req: api.CreateContainerRequest, ctx: nri_grpc.CallContext):
            return Adjustment().add_env("HELLO", req.container.name).response()

    nri_grpc.run(nri_grpc.Plugin(Hello(), name="hello", index="10"))

Messages and enums are in nri_grpc.api; Adjustment, Update and evict build
responses with classic NRI's removal-marker conventions. docs/python-plugin.md
is the tutorial.
"""

from ._version import PROTOCOL, __version__  # written in _version.py only

from . import api, events  # noqa: E402
from .adjust import Adjustment, Update, evict, is_marked_for_removal, mark_for_removal  # noqa: E402
from .errors import NotRegistered, NriError, RegistrationRefused, StatusError  # noqa: E402
from .events import event_mask, event_name, mask_events, parse_events  # noqa: E402
from .selectors import check_selectors, selector  # noqa: E402
from .plugin import (  # noqa: E402
    DEFAULT_SERVER_ADDRESS,
    DEFAULT_SOCKET_DIR,
    ENV_PLUGIN_ENDPOINT,
    ENV_PLUGIN_IDX,
    ENV_PLUGIN_NAME,
    ENV_SERVER_ADDRESS,
    METADATA_INSTANCE_ID,
    NRI_VERSION,
    CallContext,
    Plugin,
    RunResult,
    Timeouts,
    check_index,
    check_name,
    parse_name,
    peer_uid,
    run,
)

__all__ = [
    "Adjustment",
    "CallContext",
    "DEFAULT_SERVER_ADDRESS",
    "DEFAULT_SOCKET_DIR",
    "ENV_PLUGIN_ENDPOINT",
    "ENV_PLUGIN_IDX",
    "ENV_PLUGIN_NAME",
    "ENV_SERVER_ADDRESS",
    "METADATA_INSTANCE_ID",
    "NRI_VERSION",
    "NotRegistered",
    "NriError",
    "PROTOCOL",
    "Plugin",
    "RegistrationRefused",
    "RunResult",
    "StatusError",
    "Timeouts",
    "Update",
    "api",
    "check_index",
    "check_name",
    "check_selectors",
    "event_mask",
    "event_name",
    "events",
    "evict",
    "is_marked_for_removal",
    "mark_for_removal",
    "mask_events",
    "parse_events",
    "parse_name",
    "peer_uid",
    "run",
    "selector",
]
