// A plugin program for the failure tests: it adjusts containers, vetoes those
// annotated "test.nri/veto", and hangs on "test.nri/hang" (until nrid's
// deadline cancels the call).
// Usage: node failing.js SERVER_SOCKET SOCKET_DIR IDX NAME [fail]

import { Adjustment, Code, ConnectError, Plugin, run } from "@nri-grpc/plugin";

const [server, socketDir, index, name, policy] = process.argv.slice(2);

const plugin = new Plugin(
  {
    async createContainer(req, ctx) {
      const a = req.container?.annotations ?? {};
      if ("test.nri/veto" in a) {
        throw new ConnectError("containers annotated test.nri/veto are not allowed", Code.PermissionDenied);
      }
      if ("test.nri/hang" in a) {
        // Hang until the call's deadline, then fail: answering with the
        // adjustment instead would race nrid's own deadline timer (the
        // plugin's timer starts from the grpc-timeout header and can fire
        // a moment before nrid's), and a success that wins that race is
        // applied.
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
        throw new ConnectError("gave up at the deadline", Code.DeadlineExceeded);
      }
      return new Adjustment().addEnv("FAILING_PLUGIN", "was-here").response();
    },
    startContainer() {},
  },
  {
    name,
    index,
    serverAddress: server,
    socketDir,
    failurePolicy: { failRequest: policy === "fail" },
    backoffMs: [50, 500],
  },
);

await run(plugin);
