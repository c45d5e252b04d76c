#!/usr/bin/env bash
# test/e2e/kubernetes-build.sh OUTDIR: build a single-node Kubernetes control plane and
# node from the Go module proxy into OUTDIR/bin, once (a stamp marks a complete
# build; later runs return at once). Used by the Kubernetes e2e suite
# (test/e2e/k8s_*_test.go, `make k8s-e2e`), which caches OUTDIR outside the clone, keyed by
# the versions below and the Go version.
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
#       k8s.io/kubernetes KUBE_VERSION. Its module zip lacks staging/, so the
#       go.mod's replace block (k8s.io/X => ./staging/src/k8s.io/X) is removed
#       and each staging module required at the matching v0.MINOR.PATCH
#       release instead (GOWORK=off, -mod=mod).
#   etcd          go.etcd.io/etcd/server/v3 ETCD_VERSION (its go.mod replaces
#                 its sibling modules by relative paths, so it is built from a
#                 small module that requires it, not with go install).
#   bridge, host-local, loopback
#                 github.com/containernetworking/plugins CNI_PLUGINS_VERSION:
#                 the pods' network (a Linux bridge, addresses from a range).
#
# Environment: GO (go), KUBE_VERSION, ETCD_VERSION, CNI_PLUGINS_VERSION,
# BUILD_NICE (10). About 11 minutes with a cold Go build cache on 2 idle
# cores (10 min 45 s measured); nothing when cached.
set -euo pipefail

out=${1:?usage: build.sh OUTDIR}
GO=${GO:-go}
KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
CNI_PLUGINS_VERSION=${CNI_PLUGINS_VERSION:-v1.9.1}
nice_n=${BUILD_NICE:-10}
stamp=$out/stamp
want="kube=$KUBE_VERSION etcd=$ETCD_VERSION cni=$CNI_PLUGINS_VERSION go=$($GO env GOVERSION) layout=2"

log() { echo "k8s-build: $*" >&2; }
now() { date +%s; }

if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
rm -rf "$out"
mkdir -p "$out/bin"
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
# b LDFLAGS ARGS...: go build, low priority, stripped.
b() {
  local ld=$1
  shift
  nice -n "$nice_n" "$GO" build -trimpath -ldflags="-s $ld" "$@"
}

t0=$(now)
# Kubernetes.
src=$out/src/kubernetes
dir=$($GO mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d $dir ]] || { log "k8s.io/kubernetes@$KUBE_VERSION: no module directory"; exit 1; }
mkdir -p "$(dirname "$src")"
cp -r "$dir" "$src"
chmod -R u+w "$src"
staging=v0.${KUBE_VERSION#v1.}
(
  cd "$src"
  # Drop the replace block, then require every k8s.io staging module (they
  # appear as v0.0.0 in require) at the release matching KUBE_VERSION.
  sed -i '/^replace (/,/^)/d' go.mod
  mods=$(sed -n 's/^\t\(k8s\.io\/[a-z0-9-]*\) v0\.0\.0$/\1/p' go.mod)
  [[ -n $mods ]] || { log "no k8s.io staging requirements at v0.0.0 in go.mod"; exit 1; }
  args=()
  for m in $mods; do args+=("-require=$m@$staging"); done
  "$GO" mod edit "${args[@]}"
  log "kubernetes $KUBE_VERSION: $(wc -w <<<"$mods") staging modules at $staging"
  # The version the binaries report (the API server's /version, which helm
  # checks against a chart's kubeVersion), as Kubernetes' own build stamps it.
  minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  vflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    vflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  b "$vflags" -o "$out/bin/" ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler ./cmd/kubelet ./cmd/kubectl
)
t1=$(now)
log "kubernetes built in $((t1 - t0))s"

# etcd and the CNI plugins, from one small module.
tools=$out/src/tools
mkdir -p "$tools"
(
  cd "$tools"
  "$GO" mod init k8s-e2e-tools >/dev/null 2>&1
  "$GO" mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" -require="github.com/containernetworking/plugins@$CNI_PLUGINS_VERSION"
  cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "go.etcd.io/etcd/server/v3"
)
GO
  "$GO" mod tidy -e >/dev/null 2>&1 || true
  b "" -o "$out/bin/etcd" go.etcd.io/etcd/server/v3
  mkdir -p "$out/cni"
  for p in main/bridge ipam/host-local main/loopback; do
    b "" -o "$out/cni/${p#*/}" "github.com/containernetworking/plugins/plugins/$p"
  done
)
t2=$(now)
log "etcd and CNI plugins built in $((t2 - t1))s"
# The sources are only needed to build.
rm -rf "$out/src"
echo "$want" >"$stamp"
