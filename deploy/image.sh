#!/usr/bin/env bash
# deploy/image.sh: build and test the nri-grpc container image with buildah,
# without any container registry (`make image`, `make image-test`).
#
#   deploy/image.sh build   compile nrid and nrictl on the host (static,
#                           -trimpath, VCS-stamped) into .tmp/image/rootfs and
#                           assemble deploy/Containerfile FROM scratch
#   deploy/image.sh test    run the built image: nrid --version, the shipped
#                           nrid.toml checked, then nrid from the image with
#                           the example plugins pre-launched, and the image's
#                           nrictl listing them and simulating a pod lifecycle
#   deploy/image.sh plugin [NAME]
#                           the image of the example plugin NAME
#                           (examples/NAME, default ulimit-adjuster): the
#                           plugin and nrictl, static, FROM scratch, as
#                           PLUGIN_IMAGE:IMAGE_TAG
#   deploy/image.sh plugin-test [NAME]
#                           run it: the plugin from its image registers with
#                           nrid from the nrid image (IMAGE:IMAGE_TAG), and
#                           nrictl simulate shows its adjustment
#   deploy/image.sh export REF DEST.tar
#                           write the image REF as an OCI archive, named REF,
#                           for `ctr -n k8s.io images import DEST.tar`
#
# Needs root and buildah (Debian package; installed with apt-get when missing
# and apt-get is there). Environment:
#   IMAGE            image name (localhost/nri-grpc)
#   IMAGE_TAG        tag (git describe --tags --always --dirty)
#   IMAGE_ISOLATION  how `buildah run` runs the image: oci (runc), chroot,
#                    or auto (oci, else chroot; the default)
#   BUILDAH_FLAGS    global buildah flags, for example "--storage-driver vfs"
#                    (default: buildah's own storage, vfs if that fails)
#   GO               the Go command (go); GOARCH=arm64 builds an arm64 image
#   PLUGIN           the example plugin of `plugin` (ulimit-adjuster)
#   PLUGIN_IMAGE     its image name (localhost/nri-grpc-PLUGIN)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

IMAGE=${IMAGE:-localhost/nri-grpc}
IMAGE_TAG=${IMAGE_TAG:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
IMAGE_ISOLATION=${IMAGE_ISOLATION:-auto}
GO=${GO:-go}
ref=$IMAGE:$IMAGE_TAG
dir=$PWD/.tmp/image
read -r -a bflags <<<"${BUILDAH_FLAGS:-}"

log() { echo "image: $*"; }
die() {
  echo "image: $*" >&2
  exit 1
}
bh() { buildah "${bflags[@]}" "$@"; }
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
since() {
  local us=$(($(now_us) - $1))
  echo "$((us / 1000000)).$((us / 100000 % 10))s"
}

# ensure_buildah: buildah on PATH (apt-get install when missing), and a
# storage driver that works here.
ensure_buildah() {
  [[ $(id -u) == 0 ]] || die "needs root (buildah's storage, mounts and runc); CI runs as root"
  if ! command -v buildah >/dev/null; then
    command -v apt-get >/dev/null || die "buildah is not installed and there is no apt-get: install buildah (>= 1.28)"
    local t
    t=$(now_us)
    log "buildah missing: apt-get install buildah runc"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah runc
    log "buildah installed in $(since "$t")"
  fi
  if ! bh info >/dev/null 2>&1; then
    if [[ -n ${BUILDAH_FLAGS:-} ]]; then
      bh info >/dev/null || die "buildah ${BUILDAH_FLAGS} info failed"
    fi
    log "buildah's default storage does not work here; using --storage-driver vfs"
    bflags=(--storage-driver vfs)
    bh info >/dev/null || die "buildah --storage-driver vfs info failed"
  fi
  log "$(buildah --version), storage $(bh info --format '{{.store.GraphDriverName}}' 2>/dev/null || echo '?')"
}

# gobuild OUTDIR PKG...: static binaries, as the Containerfile's build stage
# makes them. -buildvcs=auto overrides a GOFLAGS=-buildvcs=false: a build
# from a git clone records the module version (a tag, or a pseudo-version)
# and the revision, which `nrid --version` prints. (Go finds no repository in
# a `git worktree`, whose .git is a file: those builds say "(devel)".) When
# git fails here (a checkout owned by another user: "dubious ownership"),
# say so and build without the stamp.
gobuild() {
  local out=$1 err
  shift
  mkdir -p "$out"
  err=$(mktemp)
  if ! CGO_ENABLED=0 "$GO" build -buildvcs=auto -trimpath -ldflags='-s -w' -o "$out/" "$@" 2>"$err"; then
    if ! grep -q 'error obtaining VCS status' "$err"; then
      cat "$err" >&2
      rm -f "$err"
      return 1
    fi
    log "WARNING: go build could not read git ($(head -n1 "$err")); building without the version stamp"
    CGO_ENABLED=0 "$GO" build -buildvcs=false -trimpath -ldflags='-s -w' -o "$out/" "$@"
  fi
  cat "$err" >&2
  rm -f "$err"
}

build() {
  ensure_buildah
  local t rootfs=$dir/rootfs arch
  # GOARCH=arm64 make image cross-compiles and labels the image arm64
  # (make image-test runs only images of the host's architecture).
  arch=$("$GO" env GOARCH)
  t=$(now_us)
  rm -rf "$rootfs"
  mkdir -p "$rootfs/etc" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  log "go build nrid nrictl (CGO_ENABLED=0, -trimpath) -> $rootfs/usr/local/bin"
  gobuild "$rootfs/usr/local/bin" ./cmd/nrid ./cmd/nrictl
  log "built in $(since "$t"): $("$rootfs/usr/local/bin/nrid" --version 2>/dev/null || echo "nrid for $arch")"
  # What distroless static has and a static Go binary may read: users and
  # groups (socket_group and [[policy]] names resolve against the image's
  # files) and a writable /tmp. No CA bundle: nrid reads its CAs from the
  # files its configuration names.
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' >"$rootfs/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$rootfs/etc/group"

  t=$(now_us)
  # buildah 1.28 may commit stages other stages build on or copy from as
  # unnamed images and leave working containers on them; remove those this
  # build leaves (and a previous image of the same tag), and only those.
  local before after id
  before=$(bh images -q --no-trunc --filter dangling=true 2>/dev/null | sort || true)
  log "buildah bud -f deploy/Containerfile (--target prebuilt-image, BASE=scratch) -t $ref"
  bh bud --quiet --pull-never \
    --target prebuilt-image --build-arg BASE=scratch \
    --arch "$arch" --build-arg TARGETARCH="$arch" \
    --build-arg VERSION="$IMAGE_TAG" --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    -f deploy/Containerfile -t "$ref" . >/dev/null
  after=$(bh images -q --no-trunc --filter dangling=true 2>/dev/null | sort || true)
  for id in $(comm -13 <(echo "$before") <(echo "$after")); do
    id=${id#sha256:}
    bh containers -a --notruncate --format '{{.ContainerID}} {{.ImageID}}' |
      awk -v id="$id" '$2 == id {print $1}' | xargs -r buildah "${bflags[@]}" rm >/dev/null || true
    bh rmi "$id" >/dev/null || true
  done
  log "assembled in $(since "$t"): $ref ($(bh images --format '{{.Size}}' "$ref" | head -n1))"
}

# ---- test ----------------------------------------------------------------

ctr=""
nrid_bg=""
nrid_rc=""
tdir=$dir/test

cleanup() {
  stop_nrid || true
  if [[ -n $ctr ]]; then bh rm "$ctr" >/dev/null 2>&1 || true; fi
}

# brun [FLAGS] CONTAINER -- ARGS...: buildah run. nrid and nrictl talk over
# the unix socket in the container's filesystem, which every run of the
# container shares, so no network: none with oci isolation (chroot isolation
# only has the host's). run ARGS...: brun in the working container.
brun() {
  local net=none
  [[ $IMAGE_ISOLATION == chroot ]] && net=host
  bh run --isolation "$IMAGE_ISOLATION" --network "$net" "$@"
}
run() { brun "$ctr" -- "$@"; }

# descendant PID NAME: the pid of the first process called NAME below PID.
descendant() {
  local queue=("$1") p c
  while ((${#queue[@]})); do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    for c in $(ps -o pid= --ppid "$p" 2>/dev/null); do
      if [[ $(ps -o comm= -p "$c" 2>/dev/null) == "$2" ]]; then
        echo "$c"
        return 0
      fi
      queue+=("$c")
    done
  done
  return 1
}

# stop_nrid: SIGTERM to nrid itself (buildah would kill the container
# instead of passing it on), so it stops its plugins gracefully; then wait.
stop_nrid() {
  [[ -n $nrid_bg ]] || return 0
  local pid i
  if pid=$(descendant "$nrid_bg" nrid); then kill -TERM "$pid" 2>/dev/null || true; fi
  for ((i = 0; i < 150; i++)); do
    kill -0 "$nrid_bg" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$nrid_bg" 2>/dev/null; then kill -TERM "$nrid_bg" 2>/dev/null || true; fi
  nrid_rc=0
  wait "$nrid_bg" 2>/dev/null || nrid_rc=$?
  nrid_bg=""
}

# expect FILE TEXT...: FILE contains every TEXT (fixed strings), else fail
# showing FILE.
expect() {
  local f=$1 want
  shift
  for want in "$@"; do
    if ! grep -qF -- "$want" "$f"; then
      echo "image-test: $(basename "$f") lacks: $want" >&2
      sed 's/^/    /' "$f" >&2
      return 1
    fi
  done
}

test_image() {
  ensure_buildah
  bh inspect --type image "$ref" >/dev/null 2>&1 || die "no image $ref: run make image first"
  local t
  t=$(now_us)
  rm -rf "$tdir"
  mkdir -p "$tdir"
  trap cleanup EXIT
  ctr=$(bh from --pull-never --name "nri-grpc-image-test-$$" "$ref")

  if [[ $IMAGE_ISOLATION == auto ]]; then
    IMAGE_ISOLATION=oci
    if ! run /usr/local/bin/nrid --version >"$tdir/probe.log" 2>&1; then
      log "buildah run --isolation oci failed here ($(tail -n1 "$tdir/probe.log")); using --isolation chroot"
      IMAGE_ISOLATION=chroot
    fi
  fi
  log "testing $ref (buildah run --isolation $IMAGE_ISOLATION)"

  # 1. The binaries run in the image, and the configuration it ships is valid.
  run /usr/local/bin/nrid --version | tee "$tdir/version.txt"
  run /usr/local/bin/nrictl --version | tee -a "$tdir/version.txt"
  expect "$tdir/version.txt" "nrid " "nrictl " "protocol  v1beta1"
  cmp LICENSE "$(bh mount "$ctr")/usr/share/doc/nri-grpc/LICENSE" || die "the image's /usr/share/doc/nri-grpc/LICENSE is not the repository's LICENSE"
  run /usr/local/bin/nrid --config /etc/nri/nrid.toml --check | tee "$tdir/check.txt"
  expect "$tdir/check.txt" "configuration OK"

  # 2. The demo, with the image's nrid and nrictl: nrid pre-launches the
  # example plugins of `go run ./cmd/nri-demo` (built static on the host,
  # mounted read-only as a node's launch directory would be), and
  # `nrictl simulate` drives nri-demo's pod through them.
  local demo=$tdir/demo
  mkdir -p "$demo/plugins" "$demo/conf" "$tdir/bin"
  gobuild "$tdir/bin" ./examples/device-injector ./examples/ulimit-adjuster ./examples/validator
  mv "$tdir/bin/device-injector" "$demo/plugins/10-device-injector"
  mv "$tdir/bin/ulimit-adjuster" "$demo/plugins/20-ulimit-adjuster"
  mv "$tdir/bin/validator" "$demo/plugins/90-validator"
  echo 'allowed_mount_sources: [/srv]' >"$demo/conf/90-validator.conf"
  cat >"$demo/nrid.toml" <<'EOF'
# /etc/nri/nrid.toml's defaults, with the example plugins pre-launched.
[launch]
plugin_dir = "/opt/nri-demo/plugins"
config_dir = "/opt/nri-demo/conf"
EOF
  brun --volume "$demo:/opt/nri-demo:ro" "$ctr" -- \
    /usr/local/bin/nrid --config /opt/nri-demo/nrid.toml --node-name image-test >"$tdir/nrid.log" 2>&1 &
  nrid_bg=$!

  # nrid serving and the three plugins registered (30 s at most).
  local deadline=$((SECONDS + 30)) ready=0
  while ((SECONDS < deadline)); do
    kill -0 "$nrid_bg" 2>/dev/null || { sed 's/^/    /' "$tdir/nrid.log" >&2; die "nrid exited"; }
    if run /usr/local/bin/nrictl plugins >"$tdir/plugins.txt" 2>&1; then
      ready=$(grep -cE '^(10-device-injector|20-ulimit-adjuster|90-validator) +launched +ready' "$tdir/plugins.txt" || true)
      ((ready == 3)) && break
    fi
    sleep 0.3
  done
  cat "$tdir/plugins.txt"
  ((ready == 3)) || { sed 's/^/    /' "$tdir/nrid.log" >&2; die "the three example plugins did not become ready within 30s"; }

  # nri-demo's pod: app-0 gets a device, a mount and a limit; app-1 asks
  # for a mount from /etc, which the validator rejects (exit status 1: one
  # event failed, as intended).
  local rc=0
  run /usr/local/bin/nrictl simulate -name web -namespace demo -containers 2 \
    -annotation 'devices.noderesource.dev/container.app-0=- {path: /dev/nri-demo0, type: c, major: 1, minor: 3, file_mode: 0666}' \
    -annotation 'mounts.noderesource.dev/pod=- {source: /srv/www, destination: /var/www, type: bind, options: [rbind, ro]}' \
    -annotation 'ulimits.noderesource.dev/container.app-0=- {type: nofile, soft: 4096, hard: 8192}' \
    -annotation 'mounts.noderesource.dev/container.app-1=- {source: /etc/ssh, destination: /keys, type: bind, options: [rbind, ro]}' \
    >"$tdir/simulate.txt" 2>"$tdir/simulate.err" || rc=$?
  cat "$tdir/simulate.txt"
  ((rc == 1)) || { cat "$tdir/simulate.err" >&2; die "nrictl simulate exited $rc, want 1 (the validator rejects app-1)"; }
  expect "$tdir/simulate.txt" \
    "adjust.linux.devices[/dev/nri-demo0].major=1" \
    "adjust.mounts[/var/www].source=/srv/www" \
    "adjust.rlimits[RLIMIT_NOFILE].soft=4096" \
    "adjust.rlimits[RLIMIT_NOFILE].hard=8192" \
    'failed: validator "90-validator" rejected container adjustment, reason: mount of /etc/ssh at /keys by 10-device-injector' \
    "16 events, 1 failed"

  # A graceful stop: every plugin got Shutdown and exited, nrid exited 0.
  stop_nrid
  expect "$tdir/nrid.log" 'msg="plugin exited" plugin=90-validator' "msg=stopped took="
  ((nrid_rc == 0)) || { sed 's/^/    /' "$tdir/nrid.log" >&2; die "nrid exited $nrid_rc"; }
  log "ok in $(since "$t"): $ref runs nrid and nrictl; nrid launched the example plugins; simulate shows their changes and the validator's rejection"
}

# ---- the example plugins' images -----------------------------------------

PLUGIN=${PLUGIN:-ulimit-adjuster}
# The plugin's identity in plugin-test: its default index (examples/README.md).
declare -A plugin_index=([logger]=00 [device-injector]=10 [ulimit-adjuster]=20 [validator]=90)

plugin_ref() { echo "${PLUGIN_IMAGE:-localhost/nri-grpc-$PLUGIN}:$IMAGE_TAG"; }

# build_plugin: the image of examples/$PLUGIN, FROM scratch: the plugin as
# the entrypoint, nrictl beside it (the plugin chart's readiness probe asks
# nrid about the plugin's health service with it), the files a static Go
# binary may read, and the repository's LICENSE.
build_plugin() {
  [[ -f examples/$PLUGIN/main.go ]] || die "no example plugin examples/$PLUGIN (one of: $(cd examples && ls -d -- */ | tr -d / | tr '\n' ' '))"
  ensure_buildah
  local pref rootfs=$dir/plugin-$PLUGIN/rootfs arch t old
  pref=$(plugin_ref)
  arch=$("$GO" env GOARCH)
  t=$(now_us)
  rm -rf "$rootfs"
  mkdir -p "$rootfs/etc" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  log "go build $PLUGIN nrictl (CGO_ENABLED=0, -trimpath) -> $rootfs/usr/local/bin"
  gobuild "$rootfs/usr/local/bin" "./examples/$PLUGIN" ./cmd/nrictl
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' >"$rootfs/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$rootfs/etc/group"
  if [[ -f LICENSE ]]; then
    install -D -m 0644 LICENSE "$rootfs/usr/share/doc/nri-grpc/LICENSE"
  else
    log "WARNING: no LICENSE at the repository root: the image carries none"
  fi
  log "built in $(since "$t")"

  t=$(now_us)
  old=$(bh images -q --no-trunc "$pref" 2>/dev/null || true)
  ctr=$(bh from --pull-never --name "nri-grpc-plugin-build-$$" scratch)
  trap cleanup EXIT
  bh copy --quiet "$ctr" "$rootfs/" / >/dev/null
  bh config --os linux --arch "$arch" \
    --entrypoint "[\"/usr/local/bin/$PLUGIN\"]" \
    --env NRICTL_SOCKET=/var/run/nri/nri-grpc.sock \
    --label org.opencontainers.image.title="nri-grpc-$PLUGIN" \
    --label org.opencontainers.image.description="$PLUGIN, an example NRI plugin of nri-grpc (examples/$PLUGIN), and nrictl" \
    --label org.opencontainers.image.source="https://github.com/nri-grpc/nri-grpc" \
    --label org.opencontainers.image.licenses="Apache-2.0" \
    --label org.opencontainers.image.version="$IMAGE_TAG" \
    --label org.opencontainers.image.revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    "$ctr"
  bh commit --quiet --rm "$ctr" "$pref" >/dev/null
  ctr=""
  # A previous image of the same tag is left untagged: remove it.
  if [[ -n $old && $old != "$(bh images -q --no-trunc "$pref")" ]]; then bh rmi "$old" >/dev/null 2>&1 || true; fi
  log "assembled in $(since "$t"): $pref ($(bh images --format '{{.Size}}' "$pref" | head -n1))"
}

# test_plugin: the plugin from its image registers with nrid from nrid's
# image, as the Helm charts run them: two containers sharing only the
# directory mounted at /var/run/nri (the host's in the charts), the plugin
# configured by the NRI_GRPC_* environment the plugin chart sets and
# required by a [[plugin]] entry. Fails unless the chart's readiness probe
# (the plugin image's nrictl asking for nri.plugin/NN-name) passes, nrictl
# plugins lists it remote, ready, policy fail, nrictl simulate shows its
# adjustment (ulimit-adjuster), and SIGTERM ends both with status 0.
plugin_bg=""
plugin_rc=""
pctr=""

stop_plugin() {
  [[ -n $plugin_bg ]] || return 0
  local pid i
  # ps shows at most 15 characters of a command's name.
  if pid=$(descendant "$plugin_bg" "${PLUGIN:0:15}"); then kill -TERM "$pid" 2>/dev/null || true; fi
  for ((i = 0; i < 100; i++)); do
    kill -0 "$plugin_bg" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$plugin_bg" 2>/dev/null; then kill -TERM "$plugin_bg" 2>/dev/null || true; fi
  plugin_rc=0
  wait "$plugin_bg" 2>/dev/null || plugin_rc=$?
  plugin_bg=""
}

cleanup_plugin() {
  stop_plugin || true
  cleanup
  if [[ -n $pctr ]]; then bh rm "$pctr" >/dev/null 2>&1 || true; fi
}

# nrun CONTAINER ARGS...: brun with the shared /var/run/nri.
nrun() {
  local c=$1
  shift
  brun --volume "$tdir/run:/var/run/nri" "$c" -- "$@"
}

test_plugin() {
  ensure_buildah
  local pref id t ep rc deadline ok=0
  pref=$(plugin_ref)
  id=${plugin_index[$PLUGIN]:-50}-$PLUGIN
  bh inspect --type image "$pref" >/dev/null 2>&1 || die "no image $pref: run make plugin-image first"
  bh inspect --type image "$ref" >/dev/null 2>&1 || die "no image $ref (nrid's): run make image first"
  t=$(now_us)
  tdir=$dir/plugin-$PLUGIN/test
  rm -rf "$tdir"
  mkdir -p "$tdir/run" "$tdir/etc"
  trap cleanup_plugin EXIT
  ctr=$(bh from --pull-never --name "nri-grpc-plugin-test-nrid-$$" "$ref")
  pctr=$(bh from --pull-never --name "nri-grpc-plugin-test-$$" "$pref")
  if [[ $IMAGE_ISOLATION == auto ]]; then
    IMAGE_ISOLATION=oci
    if ! brun "$pctr" -- /usr/local/bin/nrictl --version >"$tdir/probe.log" 2>&1; then
      log "buildah run --isolation oci failed here ($(tail -n1 "$tdir/probe.log")); using --isolation chroot"
      IMAGE_ISOLATION=chroot
    fi
  fi
  log "testing $pref with nrid from $ref (buildah run --isolation $IMAGE_ISOLATION)"

  # 1. The image: the plugin is its entrypoint, nrictl runs in it, and it
  # carries the repository's LICENSE (when there is one).
  # (buildah 1.28's templates have no json: a Go slice prints as [a b].)
  ep=$(bh inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$pref")
  [[ $ep == "[/usr/local/bin/$PLUGIN]" ]] || die "$pref: entrypoint $ep, want [/usr/local/bin/$PLUGIN]"
  brun "$pctr" -- /usr/local/bin/nrictl --version | tee "$tdir/version.txt"
  expect "$tdir/version.txt" "nrictl " "protocol  v1beta1"
  if [[ -f LICENSE ]]; then
    cmp -s LICENSE "$(bh mount "$pctr")/usr/share/doc/nri-grpc/LICENSE" || die "$pref: /usr/share/doc/nri-grpc/LICENSE is missing or differs from ./LICENSE"
    bh umount "$pctr" >/dev/null
  fi

  # 2. nrid from its image, requiring the plugin as an operator would.
  printf '%s\n' '[server]' 'socket = "/var/run/nri/nri-grpc.sock"' 'plugin_socket_dir = "/var/run/nri/plugins"' '' \
    '[[plugin]]' "name = \"$id\"" 'required = true' >"$tdir/etc/nrid.toml"
  brun --volume "$tdir/run:/var/run/nri" --volume "$tdir/etc:/etc/nri-test:ro" "$ctr" -- \
    /usr/local/bin/nrid --config /etc/nri-test/nrid.toml --node-name plugin-test >"$tdir/nrid.log" 2>&1 &
  nrid_bg=$!
  deadline=$((SECONDS + 20))
  until [[ -S $tdir/run/nri-grpc.sock ]]; do
    kill -0 "$nrid_bg" 2>/dev/null || { sed 's/^/    /' "$tdir/nrid.log" >&2; die "nrid exited"; }
    ((SECONDS < deadline)) || { sed 's/^/    /' "$tdir/nrid.log" >&2; die "nrid did not create its socket within 20s"; }
    sleep 0.2
  done

  # 3. The plugin from its image, with the plugin chart's environment.
  brun --volume "$tdir/run:/var/run/nri" \
    --env NRI_GRPC_PLUGIN_NAME="$PLUGIN" --env NRI_GRPC_PLUGIN_IDX="${id%%-*}" \
    --env NRI_GRPC_SERVER_ADDRESS=unix:///var/run/nri/nri-grpc.sock \
    --env NRI_GRPC_PLUGIN_ENDPOINT="/var/run/nri/plugins/$id.sock" \
    "$pctr" -- "/usr/local/bin/$PLUGIN" >"$tdir/plugin.log" 2>&1 &
  plugin_bg=$!

  # The chart's readiness probe, from the plugin's container: SERVING once
  # the plugin registered and is ready (20 s at most).
  deadline=$((SECONDS + 20))
  while ((SECONDS < deadline)); do
    kill -0 "$plugin_bg" 2>/dev/null || { sed 's/^/    /' "$tdir/plugin.log" >&2; die "the plugin exited"; }
    if nrun "$pctr" /usr/local/bin/nrictl --socket=/var/run/nri/nri-grpc.sock --timeout=2s \
      health -service "nri.plugin/$id" >"$tdir/health.txt" 2>&1; then
      ok=1
      break
    fi
    sleep 0.3
  done
  cat "$tdir/health.txt"
  ((ok)) || { sed 's/^/    /' "$tdir/plugin.log" "$tdir/nrid.log" >&2; die "nri.plugin/$id did not become SERVING within 20s"; }
  nrun "$ctr" /usr/local/bin/nrictl --socket=/var/run/nri/nri-grpc.sock plugins >"$tdir/plugins.txt"
  cat "$tdir/plugins.txt"
  grep -qE "^$id +remote +ready .* fail " "$tdir/plugins.txt" || die "nrictl plugins does not list $id as remote, ready, with failure policy fail"

  # 4. A pod through it: ulimit-adjuster's limit is in the merged adjustment.
  rc=0
  nrun "$ctr" /usr/local/bin/nrictl --socket=/var/run/nri/nri-grpc.sock \
    simulate -name web -namespace apps -containers 1 \
    -annotation 'ulimits.noderesource.dev/container.app-0=- {type: nofile, soft: 2048, hard: 4096}' \
    >"$tdir/simulate.txt" 2>"$tdir/simulate.err" || rc=$?
  cat "$tdir/simulate.txt"
  ((rc == 0)) || { cat "$tdir/simulate.err" >&2; die "nrictl simulate exited $rc"; }
  if [[ $PLUGIN == ulimit-adjuster ]]; then
    expect "$tdir/simulate.txt" "adjust.rlimits[RLIMIT_NOFILE].soft=2048" "adjust.rlimits[RLIMIT_NOFILE].hard=4096"
  fi

  # 5. SIGTERM: the plugin exits 0, nrid stops gracefully and exits 0.
  stop_plugin
  ((plugin_rc == 0)) || { sed 's/^/    /' "$tdir/plugin.log" >&2; die "the plugin exited $plugin_rc on SIGTERM"; }
  stop_nrid
  ((nrid_rc == 0)) || { sed 's/^/    /' "$tdir/nrid.log" >&2; die "nrid exited $nrid_rc"; }
  log "ok in $(since "$t"): $pref registers with nrid from $ref as the plugin chart runs it; its readiness probe is SERVING; simulate shows its adjustment"
}

# export_image REF DEST: REF as an OCI archive whose index names the image
# REF (org.opencontainers.image.ref.name), the name `ctr images import`
# gives it.
export_image() {
  local src=${1:-} dest=${2:-} t
  [[ -n $src && -n $dest ]] || die "usage: deploy/image.sh export REF DEST.tar"
  ensure_buildah
  bh inspect --type image "$src" >/dev/null 2>&1 || die "no image $src (buildah images lists them)"
  t=$(now_us)
  mkdir -p "$(dirname -- "$dest")"
  rm -f -- "$dest"
  bh push --quiet "$src" "oci-archive:$dest:$src" >/dev/null
  log "exported in $(since "$t"): $src -> $dest ($(du -h -- "$dest" | cut -f1)); import it with: ctr -n k8s.io images import $dest"
}

case ${1:-} in
build) build ;;
test) test_image ;;
plugin)
  PLUGIN=${2:-$PLUGIN}
  build_plugin
  ;;
plugin-test)
  PLUGIN=${2:-$PLUGIN}
  test_plugin
  ;;
export) export_image "${2:-}" "${3:-}" ;;
*) die "usage: deploy/image.sh build|test|plugin [NAME]|plugin-test [NAME]|export REF DEST.tar" ;;
esac
