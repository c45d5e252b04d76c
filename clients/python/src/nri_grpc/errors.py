"""Exceptions of the SDK."""

from __future__ import annotations

import grpc


class NriError(Exception):
    """Base class of the SDK's exceptions."""


class StatusError(NriError):
    """A handler's answer with an explicit gRPC status code.

    Raise it from a handler to choose the code the server gets. On a creating
    event (RunPodSandbox, UpdatePodSandbox, CreateContainer, StartContainer,
    UpdateContainer) any code is a veto, except UNAVAILABLE,
    DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, CANCELLED and UNIMPLEMENTED, which
    mean "the plugin could not answer" and fall under its failure policy (do
    not use them to say no). Any other exception a handler raises becomes
    FAILED_PRECONDITION with the exception's text.
    """

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class RegistrationRefused(NriError):
    """The server refused the registration for a reason retrying cannot fix
    (an invalid name, index, endpoint, subscription or capability, or a
    registration its policy does not permit): Plugin.run raises it.

    ``reason`` is the RegistrationRefusal value name of the refusal's
    google.rpc.ErrorInfo ("REGISTRATION_REFUSAL_INVALID_INDEX"), "" when the
    status had none; ``field`` the offending request field, if any.
    """

    def __init__(self, code: grpc.StatusCode, message: str, reason: str = "", field: str = "") -> None:
        super().__init__(f"registration refused: {code.name}: {message}" + (f" ({reason})" if reason else ""))
        self.code = code
        self.message = message
        self.reason = reason
        self.field = field


class NotRegistered(NriError):
    """Plugin.update_containers, set_status or request_resync was called while
    the plugin is not registered (set_status keeps the status for the next
    registration all the same)."""
