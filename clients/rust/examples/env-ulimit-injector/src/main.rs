//! env-ulimit-injector: injects environment variables and ulimits into
//! containers, as pod annotations ask. See README.md.

use std::process::ExitCode;

use env_ulimit_injector::Injector;
use nri_grpc::{Exit, Plugin};

const USAGE: &str = "usage: env-ulimit-injector [options]

  --name NAME        plugin name (default env-ulimit-injector; env NRI_GRPC_PLUGIN_NAME wins)
  --idx NN           two-digit plugin index (default 30; env NRI_GRPC_PLUGIN_IDX wins)
  --server ADDR      nrid's socket, unix:///path or a path
                     (default unix:///var/run/nri/nri-grpc.sock; env NRI_GRPC_SERVER_ADDRESS wins)
  --endpoint PATH    socket to serve on (default /var/run/nri/plugins/NN-name.sock;
                     env NRI_GRPC_PLUGIN_ENDPOINT wins)
  --fail-request     ask nrid to fail creating events while this plugin is unavailable
  --verbose          log at debug level
  --help             show this help";

struct Args {
    name: String,
    idx: String,
    server: Option<String>,
    endpoint: Option<String>,
    fail_request: bool,
    verbose: bool,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args {
        name: "env-ulimit-injector".into(),
        idx: "30".into(),
        server: None,
        endpoint: None,
        fail_request: false,
        verbose: false,
    };
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next()).ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--name" | "-name" => a.name = value()?,
            "--idx" | "-idx" => a.idx = value()?,
            "--server" | "-server" => a.server = Some(value()?),
            "--endpoint" | "-endpoint" => a.endpoint = Some(value()?),
            "--fail-request" => a.fail_request = true,
            "--verbose" | "-v" => a.verbose = true,
            "--help" | "-h" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Some(a))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("env-ulimit-injector: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let level = if args.verbose { tracing::Level::DEBUG } else { tracing::Level::INFO };
    let log = tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(level);
    if std::env::var_os(nri_grpc::ENV_PLUGIN_NAME).is_some() {
        // Launched by nrid, which timestamps the lines it logs for us.
        log.without_time().init();
    } else {
        log.init();
    }

    let mut b = Plugin::builder(Injector).name(args.name).index(args.idx).plugin_version(env!("CARGO_PKG_VERSION"));
    if let Some(s) = args.server {
        b = b.server_address(s);
    }
    if let Some(e) = args.endpoint {
        b = b.endpoint(e);
    }
    if args.fail_request {
        b = b.failure_policy(true, false);
    }
    let plugin = match b.build() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("env-ulimit-injector: {e}");
            return ExitCode::from(2);
        }
    };
    match plugin.run_until_signal().await {
        Ok(Exit::Stopped | Exit::Replaced) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("env-ulimit-injector: {e}");
            ExitCode::FAILURE
        }
    }
}
