//! The example plugin as a real process against a real nrid: injection,
//! vetoes, nrid's failure policy when the plugin errors, hangs and is
//! killed, and pre-launch by nrid (NRI_GRPC_* environment).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use env_ulimit_injector::{ENV_KEY, ULIMITS_KEY};
use nri_grpc::rpc;
use nri_grpc::testing::{Nrid, NridOptions, WAIT, container, pod_with_annotations};
use nri_grpc::tonic::{Code, Status};
use nri_grpc::v1beta1::{AdaptationServiceCreateContainerResponse, PodSandbox};

const BIN: &str = env!("CARGO_BIN_EXE_env-ulimit-injector");
const FULL: &str = "30-env-ulimit-injector";

/// The plugin process; killed on drop, its log printed if the test fails.
struct Proc {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Proc {
    fn start(nrid: &Nrid, extra: &[&str]) -> Proc {
        let mut child = Command::new(BIN)
            .arg("--server")
            .arg(nrid.server_address())
            .arg("--endpoint")
            .arg(nrid.endpoint(FULL))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the plugin");
        let log = Arc::new(Mutex::new(String::new()));
        let (stderr, l) = (child.stderr.take().unwrap(), log.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                l.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        Proc { child, log }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, sig) }, 0);
    }

    /// Stops the process (SIGSTOP) and waits until every thread is stopped:
    /// kill(2) returns before a thread running on another CPU has stopped.
    async fn freeze(&self) {
        self.signal(libc::SIGSTOP);
        let tasks = format!("/proc/{}/task", self.child.id());
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let all_stopped = std::fs::read_dir(&tasks).unwrap().all(|t| {
                let stat = std::fs::read_to_string(t.unwrap().path().join("stat")).unwrap_or_default();
                // The state follows the command name in parentheses.
                stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('T'))
            });
            if all_stopped {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "the plugin did not stop");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(tokio::time::Instant::now() < deadline, "the plugin did not exit:\n{}", self.log.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("---- plugin log ----\n{}", self.log.lock().unwrap());
        }
    }
}

fn annotated(id: &str, env: &str, ulimits: &str) -> PodSandbox {
    let (ek, uk) = (format!("{ENV_KEY}/container.app"), format!("{ULIMITS_KEY}/pod"));
    pod_with_annotations(id, &[(ek.as_str(), env), (uk.as_str(), ulimits)])
}

fn injected(rsp: &AdaptationServiceCreateContainerResponse) -> (Vec<String>, Vec<(String, u64, u64)>) {
    let a = rsp.adjust.clone().unwrap_or_default();
    let mut env: Vec<String> = a.env.iter().map(|kv| format!("{}={}", kv.key, kv.value)).collect();
    env.sort();
    let mut rl: Vec<(String, u64, u64)> = a.rlimits.iter().map(|r| (r.r#type.clone(), r.soft, r.hard)).collect();
    rl.sort();
    (env, rl)
}

fn fails_with(what: &str, r: Result<impl std::fmt::Debug, Status>, code: Code, reason: &str) -> Status {
    let st = r.expect_err(what);
    assert_eq!((st.code(), rpc::reason(&st).as_str()), (code, reason), "{what}: {st:?}");
    assert_eq!(rpc::plugins(&st), [FULL], "{what}: {st:?}");
    st
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injects_env_and_ulimits_and_vetoes_bad_annotations() {
    let mut nrid = Nrid::start().await;
    nrid.attach(vec![], vec![]).await;
    let mut p = Proc::start(&nrid, &[]);
    nrid.wait_plugins(&[FULL]).await;

    let pod = annotated("pod0", "GREETING=hello; -DEBUG", "nofile=1024:4096");
    let mut app = container("pod0", "app");
    app.env.push("GREETING=bye".into());
    let rsp = nrid.create_container(pod.clone(), app).await.expect("CreateContainer");
    let (env, rl) = injected(&rsp);
    assert_eq!(env, ["-DEBUG=", "GREETING=hello"]);
    assert_eq!(rl, [("RLIMIT_NOFILE".to_owned(), 1024, 4096)]);
    // A sidecar gets the pod-wide ulimits only.
    let rsp = nrid.create_container(pod.clone(), container("pod0", "sidecar")).await.expect("CreateContainer");
    assert_eq!(injected(&rsp), (vec![], vec![("RLIMIT_NOFILE".to_owned(), 1024, 4096)]));

    let bad = annotated("pod1", "OK=1", "nofile=10:1");
    let st = fails_with(
        "bad ulimits",
        nrid.create_container(bad, container("pod1", "app")).await,
        Code::InvalidArgument,
        "DISPATCH_OUTCOME_VETOED",
    );
    assert!(st.message().contains("soft limit 10 is above the hard limit 1"), "{st:?}");

    // SIGTERM: the plugin unregisters and exits 0.
    p.signal(libc::SIGTERM);
    assert!(p.wait_exit().await.success());
    nrid.wait_plugins(&[]).await;
    assert!(!nrid.endpoint(FULL).exists());
}

/// nrid's failure policy for a plugin that asked for fail_request
/// (PROTOCOL.md §11): its errors are verdicts; while it cannot answer,
/// creating events fail; once its registration is gone (evicted after a
/// timeout, or killed) events go on without it unless a pod requires it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policy_when_the_plugin_errors_hangs_and_is_killed() {
    let mut nrid = Nrid::start_with(NridOptions {
        config: Some("[server]\nrequest_timeout = \"500ms\"\nshutdown_grace = \"200ms\"\n".into()),
    })
    .await;
    nrid.attach(vec![], vec![]).await;
    let mut p = Proc::start(&nrid, &["--fail-request"]);
    let plugins = nrid.wait_plugins(&[FULL]).await;
    let first = plugins[0].instance_id.clone();
    assert!(plugins[0].failure_policy.is_some_and(|f| f.fail_request && !f.keep_connected), "{:?}", plugins[0]);
    let good = annotated("pod0", "A=1", "core=0");

    // 1. The plugin errors: a verdict, whatever the failure policy.
    let bad = annotated("pod1", "1NVALID=x", "");
    fails_with(
        "a plugin error",
        nrid.create_container(bad, container("pod1", "app")).await,
        Code::InvalidArgument,
        "DISPATCH_OUTCOME_VETOED",
    );

    // 2. The plugin hangs (SIGSTOP): the call times out, an availability
    // failure; under fail_request the creation fails, and nrid disconnects
    // the plugin (keep_connected is false).
    p.freeze().await;
    let st = fails_with(
        "a hung required plugin",
        nrid.create_container(good.clone(), container("pod0", "app")).await,
        Code::Unavailable,
        "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE",
    );
    assert!(st.message().contains(FULL), "{st:?}");
    nrid.wait_plugins(&[]).await;
    // Gone, it is no longer required: creations go on without it.
    let rsp = nrid.create_container(good.clone(), container("pod0", "app")).await.expect("without the evicted plugin");
    assert_eq!(injected(&rsp), (vec![], vec![]));

    // The plugin resumes: the SDK registers it again, as a new instance.
    p.signal(libc::SIGCONT);
    let plugins = nrid.wait_plugins(&[FULL]).await;
    assert_ne!(plugins[0].instance_id, first);
    let rsp = nrid.create_container(good.clone(), container("pod0", "app")).await.expect("re-registered");
    assert_eq!(injected(&rsp).0, ["A=1"]);

    // 3. The plugin is killed: its registration ends with the connection.
    p.child.kill().unwrap();
    p.wait_exit().await;
    nrid.wait_plugins(&[]).await;
    let rsp = nrid.create_container(good.clone(), container("pod0", "app")).await.expect("without the killed plugin");
    assert_eq!(injected(&rsp), (vec![], vec![]));
    // A pod that requires it by annotation fails.
    let mut strict = good.clone();
    strict.annotations.insert("required-plugins.noderesource.dev".into(), "[\"env-ulimit-injector\"]".into());
    let r = nrid.create_container(strict, container("pod0", "app")).await;
    let st = r.expect_err("a required, absent plugin");
    assert_eq!(
        (st.code(), rpc::reason(&st).as_str()),
        (Code::Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE"),
        "{st:?}"
    );
    assert!(st.message().contains("env-ulimit-injector"), "{st:?}");
}

/// nrid pre-launches the plugin from its launch directory: the SDK takes
/// its name, index, endpoint and server address from NRI_GRPC_*; on nrid's
/// stop the plugin gets SERVER_STOPPING and exits on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prelaunched_by_nrid() {
    let launch = std::env::temp_dir().join(format!("nri-rs-launch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&launch);
    std::fs::create_dir_all(&launch).unwrap();
    std::os::unix::fs::symlink(BIN, launch.join("40-injector")).unwrap();
    let mut nrid = Nrid::start_with(NridOptions {
        config: Some(format!("[launch]\nplugin_dir = {:?}\n", launch.to_str().unwrap())),
    })
    .await;
    nrid.attach(vec![], vec![]).await;
    let plugins = nrid.wait_plugins(&["40-injector"]).await;
    assert_eq!(plugins[0].endpoint, format!("unix://{}", nrid.endpoint("40-injector").display()));
    let pod = annotated("pod0", "LAUNCHED=yes", "");
    let rsp = nrid.create_container(pod, container("pod0", "app")).await.expect("CreateContainer");
    assert_eq!(injected(&rsp).0, ["LAUNCHED=yes"]);
    assert_eq!(plugins[0].kind(), nri_grpc::v1beta1::PluginKind::Launched);
    nrid.stop().await;
    // nrid logs the plugin's stderr and its exit.
    let log = nrid.logs();
    assert!(log.contains("kind=ServerStopping"), "{log}");
    assert!(log.contains("SIGTERM: stopping"), "{log}");
    assert!(
        log.contains(r#"msg="plugin exited" plugin=40-injector"#) && log.contains(r#"status="exit status 0""#),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&launch);
}
