//! The container files as shipped, through a real podman and the Kubernetes API schemas:
//!
//! - `deploy/Containerfile` builds with `podman build --format docker` (the OCI format
//!   podman writes by default has no HEALTHCHECK) and the image keeps its healthcheck;
//! - the image as built serves a site mounted read-only at `/srv/www`, answers `/health`
//!   on the metrics port, passes `podman healthcheck run`, and `podman stop` is graceful:
//!   a download in flight finishes whole and the container exits 0 (STOPSIGNAL SIGQUIT to
//!   steerd as PID 1);
//! - the DaemonSet's `args`, read from `deploy/kubernetes/daemonset.yaml`, composed with
//!   the image's ENTRYPOINT as Kubernetes composes them (`podman run IMAGE ARGS...` does
//!   the same), with the container's securityContext mirrored, serve and write the access
//!   log to the container's stdout;
//! - `kubernetes-validate --strict` accepts every manifest in `deploy/kubernetes/`, and
//!   rejects one with an unknown field (so its pass means something).
//!
//! podman runs with its own storage under the target directory (never the user's
//! images), with runc (crun refuses a host with hybrid cgroups), cgroupfs and its events
//! in a file (no systemd needed), ports published on 127.0.0.1 only. Every container and
//! image a test makes is removed when its guard drops; every wait is bounded. Where
//! podman, a static x86-64 steerd, python3's yaml or kubernetes-validate is missing, the
//! test says so, and fails under CI.
//!
//! The image holds the binary under test when it is a static x86-64 executable, else
//! `scripts/static.sh`'s x86-64 musl build (so the arm64 suite under qemu-user tests the
//! same x86-64 image).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use support::server::{alive, wait_until, TempDir, PATIENCE};
use support::skip::skip_or_fail;

/// The repository root (where `deploy/` is).
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What a bounded command left: its status and its two outputs.
struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// Panics with the command's output unless it exited 0.
    fn ok(self, what: &str) -> Ran {
        assert!(
            self.status.success(),
            "{what}: {}\nstdout: {}\nstderr: {}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs `cmd` to its exit within `limit`, its output in files (a daemon it forks, such as
/// conmon, may keep a pipe open long after it exits); killed by PID past the limit.
fn bounded(cmd: &mut Command, limit: Duration) -> Ran {
    let dir = TempDir::new("containers-out");
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    Ran {
        status,
        stdout: read(&out),
        stderr: read(&err),
    }
}

/// podman with storage of its own under the target directory and the options this kind
/// of machine needs (runc, cgroupfs, events in a file).
struct Podman {
    store: PathBuf,
}

impl Podman {
    /// The podman to test with, or why there is none.
    fn find() -> Result<Podman, String> {
        let store = support::target_dir().join("podman");
        let podman = Podman { store };
        let version = Command::new("podman").arg("--version").output();
        match version {
            Ok(v) if v.status.success() => {}
            _ => return Err("podman is not installed (Debian: podman runc)".into()),
        }
        let info = bounded(
            podman
                .cmd()
                .args(["info", "--format", "{{.Host.OCIRuntime.Name}}"]),
            PATIENCE,
        );
        if !info.status.success() {
            return Err(format!("podman info fails: {}", info.stderr.trim()));
        }
        podman.sweep();
        Ok(podman)
    }

    /// Removes what a run of these tests killed before its guards dropped left behind:
    /// the containers (`steerd-test-PID-N`) and images (`steerd-test:TAG-PID`) named
    /// after a test process that is gone.
    fn sweep(&self) {
        let gone = |pid: Option<&str>| pid.and_then(|p| p.parse().ok()).is_some_and(|p| !alive(p));
        let listed = |args: &[&str]| self.run(args, PATIENCE).stdout;
        let filter = "name=^steerd-test-";
        for name in listed(&["ps", "-a", "--filter", filter, "--format", "{{.Names}}"]).lines() {
            if gone(name.split('-').nth(2)) {
                self.run(&["rm", "-f", "-t", "0", name], PATIENCE);
            }
        }
        let filter = "reference=localhost/steerd-test";
        for tag in listed(&["images", "--filter", filter, "--format", "{{.Tag}}"]).lines() {
            if gone(tag.rsplit('-').next()) {
                self.run(
                    &["rmi", "-f", &format!("localhost/steerd-test:{tag}")],
                    PATIENCE,
                );
            }
        }
    }

    /// `podman` with the global options.
    fn cmd(&self) -> Command {
        let mut cmd = Command::new("podman");
        cmd.arg("--root")
            .arg(self.store.join("root"))
            .arg("--runroot")
            .arg(self.store.join("run"))
            .args(["--runtime", "runc", "--cgroup-manager", "cgroupfs"])
            .args(["--events-backend", "file"]);
        cmd
    }

    /// `podman ARGS` within `limit`.
    fn run(&self, args: &[&str], limit: Duration) -> Ran {
        bounded(self.cmd().args(args), limit)
    }
}

/// An image built from `deploy/Containerfile`, removed on drop.
struct Image<'p> {
    podman: &'p Podman,
    tag: String,
}

impl Drop for Image<'_> {
    fn drop(&mut self) {
        let _ = self.podman.run(&["rmi", "-f", &self.tag], PATIENCE);
    }
}

/// A container started with `podman run -d --name NAME`, removed on drop.
struct Container<'p> {
    podman: &'p Podman,
    name: String,
}

impl Container<'_> {
    /// `podman inspect --format FORMAT NAME`, trimmed.
    fn inspect(&self, format: &str) -> String {
        let ran = self
            .podman
            .run(&["inspect", "--format", format, &self.name], PATIENCE);
        ran.ok("podman inspect").stdout.trim().to_string()
    }

    /// What the container wrote to its stdout so far.
    fn stdout(&self) -> String {
        self.podman
            .run(&["logs", &self.name], PATIENCE)
            .ok("podman logs")
            .stdout
    }

    /// Its state and both its outputs, for a failure message.
    fn describe(&self) -> String {
        let logs = self.podman.run(&["logs", &self.name], PATIENCE);
        let state = self.inspect("{{.State.Status}} {{.State.ExitCode}}");
        format!(
            "container {state}; stdout: {:?}; stderr: {:?}",
            logs.stdout, logs.stderr
        )
    }
}

impl Drop for Container<'_> {
    fn drop(&mut self) {
        let _ = self
            .podman
            .run(&["rm", "-f", "-t", "0", &self.name], PATIENCE);
    }
}

/// Is the ELF file at `path` an x86-64 executable without a program interpreter (static,
/// or static-pie)? Reads the ELF64 header and its program headers (PT_INTERP = 3).
fn static_x86_64(path: &Path) -> bool {
    let Ok(elf) = std::fs::read(path) else {
        return false;
    };
    let u16_at = |o: usize| {
        elf.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    if elf.get(..6) != Some(b"\x7fELF\x02\x01") || u16_at(0x12) != Some(0x3e) {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    (0..phnum).all(|i| {
        let at = phoff as usize + i * phentsize;
        u32_at(at).is_some_and(|kind| kind != 3)
    })
}

/// The static steerd to put in the image: the binary under test when it is static, else
/// `scripts/static.sh`'s musl build, the file the Containerfile copies.
fn static_binary() -> Result<PathBuf, String> {
    let musl = support::target_dir().join("x86_64-unknown-linux-musl/release/steerd");
    [PathBuf::from(env!("CARGO_BIN_EXE_steerd")), musl.clone()]
        .into_iter()
        .find(|p| static_x86_64(p))
        .ok_or(format!(
            "neither the test's steerd nor {} is a static x86-64 binary (run scripts/static.sh)",
            musl.display()
        ))
}

/// Builds `deploy/Containerfile` as a user does (`podman build --format docker -f
/// deploy/Containerfile`), from a context holding `binary` where the Containerfile
/// copies it from.
fn build<'p>(podman: &'p Podman, binary: &Path, tag: &str) -> Image<'p> {
    let context = TempDir::new("containers-context");
    let dest = context
        .path()
        .join("target/x86_64-unknown-linux-musl/release");
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::copy(binary, dest.join("steerd")).unwrap();
    let image = Image {
        podman,
        tag: format!("localhost/steerd-test:{tag}-{}", std::process::id()),
    };
    let file = repo().join("deploy/Containerfile");
    let file = file.to_str().unwrap();
    let context = context.path().to_str().unwrap();
    let args = [
        "build", "--format", "docker", "-f", file, "-t", &image.tag, context,
    ];
    podman
        .run(&args, Duration::from_secs(120))
        .ok("podman build");
    image
}

/// A site with `index.html` and a 40 MB `big.bin`, readable by the image's user.
fn site() -> TempDir {
    let site = TempDir::new("containers-site");
    std::fs::write(site.path().join("index.html"), b"hello from the image\n").unwrap();
    let big: Vec<u8> = (0..BIG as u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(site.path().join("big.bin"), big).unwrap();
    site
}

/// The size of `big.bin`: at `RATE` a download takes about 3.3 s.
const BIG: usize = 40 << 20;
const RATE: &str = "12M";

/// Options every `podman run` here needs: the machine's hard limits are below podman's
/// default ulimits; the log goes to a file `podman logs` reads.
const RUN_OPTS: [&str; 4] = [
    "--ulimit=nofile=16384:16384",
    "--ulimit=nproc=4096:4096",
    "--log-driver=k8s-file",
    "--pull=never",
];

/// `podman run -d --name NAME OPTS... IMAGE ARGS...` with `site` at `/srv/www` read-only
/// and container ports 8080 and 9090 published on free loopback ports: the container,
/// its (http, metrics) addresses.
fn start<'p>(
    podman: &'p Podman,
    image: &Image,
    site: &Path,
    opts: &[&str],
    args: &[String],
) -> (Container<'p>, std::net::SocketAddr, std::net::SocketAddr) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("steerd-test-{}-{n}", std::process::id());
    let (http, metrics) = (support::free_port(), support::free_port());
    let mut cmd = podman.cmd();
    cmd.args(["run", "-d", "--name", &name])
        .args(RUN_OPTS)
        .arg(format!("--volume={}:/srv/www:ro", site.display()))
        .arg(format!("--publish=127.0.0.1:{http}:8080"))
        .arg(format!("--publish=127.0.0.1:{metrics}:9090"))
        .args(opts)
        .arg(&image.tag)
        .args(args);
    let container = Container { podman, name };
    bounded(&mut cmd, Duration::from_secs(60)).ok("podman run");
    let addr = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
    (container, addr(http), addr(metrics))
}

/// One `GET path` on a fresh connection, or `None` while nothing answers whole.
fn try_get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let head = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    s.write_all(head.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.get(9..12)?.parse().ok()?;
    Some((status, text.split_once("\r\n\r\n")?.1.to_string()))
}

/// Polls `GET path` until it answers 200 (bounded): the body.
fn wait_200(container: &Container, addr: std::net::SocketAddr, path: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match try_get(addr, path) {
            Some((200, body)) => return body,
            last => assert!(
                Instant::now() < deadline,
                "GET {path} never answered 200 (last {last:?}); {}",
                container.describe()
            ),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// podman and a static steerd, or the test says why not.
fn prerequisites(test: &str) -> Option<(Podman, PathBuf)> {
    match (Podman::find(), static_binary()) {
        (Ok(podman), Ok(binary)) => Some((podman, binary)),
        (Err(why), _) | (_, Err(why)) => {
            skip_or_fail(test, &why);
            None
        }
    }
}

#[test]
fn containers_image_serves_checks_health_and_stops_gracefully() {
    let _measuring = crate::support::serial::exclusive();
    let Some((podman, binary)) = prerequisites("containers_image") else {
        return;
    };
    let image = build(&podman, &binary, "image");
    let health = podman
        .run(
            &[
                "image",
                "inspect",
                "--format",
                "{{json .Config.Healthcheck}}",
                &image.tag,
            ],
            PATIENCE,
        )
        .ok("podman image inspect")
        .stdout;
    assert!(
        health.contains("/steerd") && health.contains("/health"),
        "the image has no HEALTHCHECK (was it built as OCI?): {health}"
    );

    let site = site();
    let (container, http, metrics) = start(&podman, &image, site.path(), &[], &[]);
    assert_eq!(wait_200(&container, http, "/"), "hello from the image\n");
    wait_200(&container, metrics, "/health");
    podman
        .run(&["healthcheck", "run", &container.name], PATIENCE)
        .ok("podman healthcheck run");
    assert_eq!(
        container.inspect("{{.State.Healthcheck.Status}}"),
        "healthy"
    );

    // `check` as the command after the image name: the plan, nothing bound.
    let mut check = podman.cmd();
    check
        .args(["run", "--rm"])
        .args(RUN_OPTS)
        .arg(format!("--volume={}:/srv/www:ro", site.path().display()))
        .args([&image.tag, "check", "/srv/www"]);
    let plan = bounded(&mut check, Duration::from_secs(60)).ok("podman run IMAGE check");
    assert!(plan.stdout.contains("workers:"), "no plan: {}", plan.stdout);

    // A download slow enough to be in flight when the stop arrives (about 3.3 s).
    let url = format!("http://{http}/big.bin");
    let mut curl = Command::new("curl")
        .args(["-sS", "--max-time", "20", "--limit-rate", RATE])
        .args(["-o", "/dev/null", "-w", "%{http_code} %{size_download}"])
        .arg(&url)
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl");
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        curl.try_wait().unwrap().is_none(),
        "the download finished before the stop"
    );
    let stopped = Instant::now();
    podman
        .run(
            &["stop", "-t", "30", &container.name],
            Duration::from_secs(40),
        )
        .ok("podman stop");
    let took = stopped.elapsed();
    let out = curl.wait_with_output().expect("curl");
    let got = String::from_utf8_lossy(&out.stdout).into_owned();
    // What steerd says it sent (the access log's size field), to tell a response steerd
    // cut short from bytes lost after steerd wrote them.
    let logged = container.stdout();
    let logged = logged
        .lines()
        .find(|l| l.contains("GET /big.bin"))
        .unwrap_or("none");
    assert!(
        out.status.success() && got == format!("200 {BIG}"),
        "the download in flight did not finish whole: curl {} got {got} of {BIG} bytes \
         after podman stop ({took:?}); steerd's access log line: {logged}",
        out.status
    );
    assert_eq!(
        container.inspect("{{.State.ExitCode}}"),
        "0",
        "exit code after podman stop"
    );
    eprintln!("containers_image: podman stop took {took:?} with a download in flight");
}

/// What the DaemonSet's steerd container says, read from the manifest by PyYAML (the
/// YAML library kubernetes-validate brings) and handed over as JSON.
const READ_DAEMONSET: &str = r#"
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "DaemonSet"]
pod = docs[0]["spec"]["template"]["spec"]
c = [c for c in pod["containers"] if c["name"] == "steerd"][0]
print(json.dumps({"pod": pod.get("securityContext", {}), "container": c}))
"#;

/// `deploy/kubernetes/daemonset.yaml`'s steerd container (with the pod's
/// securityContext under `pod`), or why it cannot be read here.
fn daemonset() -> Result<serde_json::Value, String> {
    let file = repo().join("deploy/kubernetes/daemonset.yaml");
    let ran = bounded(
        Command::new("python3")
            .args(["-c", READ_DAEMONSET])
            .arg(&file),
        PATIENCE,
    );
    if !ran.status.success() {
        return Err(format!(
            "python3 with PyYAML cannot read the manifest: {}",
            ran.stderr.trim()
        ));
    }
    serde_json::from_str(&ran.stdout).map_err(|e| format!("{e}: {}", ran.stdout))
}

#[test]
fn containers_daemonset_args_serve_and_log_to_stdout() {
    let _measuring = crate::support::serial::exclusive();
    let Some((podman, binary)) = prerequisites("containers_daemonset") else {
        return;
    };
    let spec = match daemonset() {
        Ok(spec) => spec,
        Err(why) => return skip_or_fail("containers_daemonset", &why),
    };
    let c = &spec["container"];
    let args: Vec<String> = c["args"]
        .as_array()
        .expect("the DaemonSet's container has args")
        .iter()
        .map(|a| a.as_str().expect("args are strings").to_string())
        .collect();
    assert!(
        c.get("command").is_none(),
        "command would replace the image's ENTRYPOINT"
    );
    // The pod's and the container's securityContext, as podman options: the test knows
    // these values, and fails if the manifest drifts from them.
    let (pod, sc) = (&spec["pod"], &c["securityContext"]);
    assert_eq!(
        (pod["runAsUser"].as_u64(), pod["runAsGroup"].as_u64()),
        (Some(65534), Some(65534))
    );
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    let mirrored = [
        "--user=65534:65534",
        "--read-only",
        "--cap-drop=all",
        "--security-opt=no-new-privileges",
    ];
    let ports: Vec<u64> = c["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["containerPort"].as_u64().unwrap())
        .collect();
    assert_eq!(ports, [8080, 9090], "the ports the test publishes");
    let probe = c["readinessProbe"]["httpGet"]["path"]
        .as_str()
        .expect("an httpGet readiness probe");

    let image = build(&podman, &binary, "daemonset");
    let site = site();
    let (container, http, metrics) = start(&podman, &image, site.path(), &mirrored, &args);
    wait_200(&container, metrics, probe);
    assert_eq!(wait_200(&container, http, "/"), "hello from the image\n");
    wait_until(
        "the access log line of GET / is on the container's stdout",
        || {
            let stdout = container.stdout();
            stdout
                .lines()
                .any(|l| l.contains("\"GET / HTTP/1.1\" 200 "))
        },
    );
}

#[test]
fn containers_kubernetes_manifests_pass_strict_validation() {
    let _measuring = crate::support::serial::exclusive();
    let dir = repo().join("deploy/kubernetes");
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    manifests.sort();
    assert!(
        manifests.len() >= 2,
        "the DaemonSet and the Service: {manifests:?}"
    );
    let validate = |files: &[PathBuf]| {
        Command::new("kubernetes-validate")
            .args(["--strict", "--quiet"])
            .args(files)
            .output()
    };
    let ran = match validate(&manifests) {
        Ok(ran) => ran,
        Err(e) => {
            return skip_or_fail(
                "containers_kubernetes",
                &format!("kubernetes-validate: {e} (pip install kubernetes-validate)"),
            )
        }
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        ran.status.success(),
        "kubernetes-validate --strict: {}{}",
        text(&ran.stdout),
        text(&ran.stderr)
    );

    // The same DaemonSet with one field the schema does not have must fail.
    let bad = TempDir::new("containers-bad-manifest");
    let daemonset = std::fs::read_to_string(dir.join("daemonset.yaml")).unwrap();
    let wrong = daemonset.replacen(
        "      containers:\n",
        "      containerz: []\n      containers:\n",
        1,
    );
    assert_ne!(wrong, daemonset, "the pod spec's containers: line moved");
    let file = bad.path().join("daemonset.yaml");
    std::fs::write(&file, wrong).unwrap();
    let ran = validate(&[file]).expect("kubernetes-validate");
    assert!(
        !ran.status.success(),
        "kubernetes-validate --strict accepted an unknown field"
    );
}
