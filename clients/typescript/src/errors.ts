// Errors of the SDK.

import { Code } from "@connectrpc/connect";

/**
 * nrid refused the registration for a reason retrying cannot fix (an invalid
 * name, index, endpoint, subscription or capability, or a registration its
 * policy does not permit): Plugin.run rejects with it. reason is the
 * RegistrationRefusal value name of the refusal's google.rpc.ErrorInfo, ""
 * when the status had none; field the offending request field, if any.
 */
export class RegistrationRefusedError extends Error {
  override readonly name = "RegistrationRefusedError";
  constructor(
    readonly code: Code,
    readonly rawMessage: string,
    readonly reason: string,
    readonly field: string,
  ) {
    super(`registration refused: ${Code[code]}: ${rawMessage}${reason ? ` (${reason})` : ""}`);
  }
}

/** Plugin.updateContainers, setStatus or requestResync was called while the plugin is not registered (setStatus keeps the status for the next registration all the same). */
export class NotRegisteredError extends Error {
  override readonly name = "NotRegisteredError";
}
