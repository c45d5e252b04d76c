/** Version of the SDK (sent as RegisterPluginRequest.nri_version "typescript-sdk VERSION"). */
export const VERSION = "0.1.0";
