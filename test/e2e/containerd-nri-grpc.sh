#!/usr/bin/env bash
# containerd-nri-grpc.sh CHECKOUT OUTDIR
#
# Builds containerd v2.4.2 with nri-grpc's drop-in for containerd's embedded
# NRI: the import of github.com/containerd/nri/pkg/adaptation in the 11 files
# of containerd's internal/nri becomes github.com/nri-grpc/nri-grpc/adaptation,
# and containerd's go.mod requires nri-grpc, replaced by the checkout
# CHECKOUT. ctr and containerd-shim-runc-v2 are not rebuilt: the stock ones
# work with it.
#
# OUTDIR gets:
#   src/                                 containerd's module source, patched (go.mod and go.sum resolved)
#   bin/containerd                       the patched containerd
#   containerd-v2.4.2-nri-grpc.patch     the patch (the 11 files and go.mod; the replace names ../nri-grpc)
#   mvs.txt                              every module whose version differs from containerd's own go.mod
#   complete                             written last: the tree is patched, resolved and builds
#
# It fails, saying why, when containerd's source is not exactly what the
# patch expects (other files or another number of imports).
#
# Environment: GO (default go). Needs the Go module proxy (or a warm module
# cache). Everything is written under OUTDIR; the Go module and build caches
# are the user's.
set -euo pipefail

CTRD_MODULE=github.com/containerd/containerd/v2
CTRD_VERSION=v2.4.2
OLD_IMPORT='nri "github.com/containerd/nri/pkg/adaptation"'
NEW_IMPORT='nri "github.com/nri-grpc/nri-grpc/adaptation"'
# The files of containerd v2.4.2 that import pkg/adaptation, once each.
EXPECTED_FILES="internal/nri/config.go
internal/nri/container.go
internal/nri/container_linux.go
internal/nri/container_other.go
internal/nri/deprecations.go
internal/nri/domain.go
internal/nri/metrics.go
internal/nri/nri.go
internal/nri/sandbox.go
internal/nri/sandbox_linux.go
internal/nri/sandbox_other.go"
PLACEHOLDER_VERSION=v0.0.0-00010101000000-000000000000

GO=${GO:-go}
die() { echo "containerd-nri-grpc: $*" >&2; exit 1; }
log() { echo "containerd-nri-grpc: $*" >&2; }

[ $# -eq 2 ] || die "usage: $0 CHECKOUT OUTDIR"
checkout=$(cd "$1" && pwd) || die "no checkout $1"
grep -q '^module github.com/nri-grpc/nri-grpc$' "$checkout/go.mod" 2>/dev/null ||
	die "$checkout is not a checkout of github.com/nri-grpc/nri-grpc (its go.mod)"
[ -d "$checkout/adaptation" ] || die "$checkout has no adaptation/ package (the drop-in)"
mkdir -p "$2"
out=$(cd "$2" && pwd)
src=$out/src
export GOWORK=off GOFLAGS=-buildvcs=false
rm -f "$out/complete"

# 1. containerd's module source from the module proxy (or the module cache).
json=$("$GO" mod download -json "$CTRD_MODULE@$CTRD_VERSION") || die "go mod download $CTRD_MODULE@$CTRD_VERSION failed"
orig=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[ -n "$orig" ] && [ -f "$orig/go.mod" ] || die "go mod download gave no module directory: $json"
rm -rf "$src"
cp -r "$orig" "$src"
chmod -R u+w "$src"
log "containerd $CTRD_VERSION source: $orig -> $src"

# 2. The import patch: exactly the expected files, one import each.
cd "$src"
found=$(grep -rlF --include='*.go' '"github.com/containerd/nri/pkg/adaptation"' . | sed 's|^\./||' | LC_ALL=C sort)
[ "$found" = "$EXPECTED_FILES" ] || die "files importing pkg/adaptation differ from the expected 11:
$(diff <(printf '%s\n' "$EXPECTED_FILES") <(printf '%s\n' "$found") || true)"
for f in $EXPECTED_FILES; do
	n=$(grep -cF "$OLD_IMPORT" "$f" || true)
	[ "$n" = 1 ] || die "$f: $n occurrences of the import '$OLD_IMPORT', want 1"
	sed -i "s|$OLD_IMPORT|$NEW_IMPORT|" "$f"
	[ "$(grep -cF "$NEW_IMPORT" "$f")" = 1 ] || die "$f: the import was not rewritten"
done
left=$(grep -rlF --include='*.go' '"github.com/containerd/nri/pkg/adaptation"' . || true)
[ -z "$left" ] || die "pkg/adaptation still imported after the patch: $left"
changed=$({ diff -rq "$orig" "$src" || true; } | wc -l)
[ "$changed" = 11 ] || die "$changed files differ from containerd's source after the import patch, want 11"
log "import patched in 11 files"

# 3. go.mod: require and replace nri-grpc, then let MVS resolve the graph.
"$GO" list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all | sed '/^$/d' | LC_ALL=C sort >"$out/.before"
"$GO" mod edit -require="github.com/nri-grpc/nri-grpc@$PLACEHOLDER_VERSION" -replace="github.com/nri-grpc/nri-grpc=$checkout"
start=$(date +%s)
"$GO" mod tidy || die "go mod tidy failed"
log "go mod tidy: $(($(date +%s) - start)) s"
"$GO" list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all | sed '/^$/d' | LC_ALL=C sort >"$out/.after"
{
	echo "# modules whose version MVS changed from containerd $CTRD_VERSION's go.mod (module containerd's new)"
	LC_ALL=C join -a2 -e '-' -o 0,1.2,2.2 "$out/.before" "$out/.after" | awk '$2 != $3 && $1 != "github.com/nri-grpc/nri-grpc"'
	echo "# github.com/nri-grpc/nri-grpc => $checkout"
} >"$out/mvs.txt"
rm -f "$out/.before" "$out/.after"
log "MVS changed $(grep -vc '^#' "$out/mvs.txt" || true) module versions (mvs.txt): github.com/containerd/nri $(awk '$1 == "github.com/containerd/nri" {print $2 " -> " $3}' "$out/mvs.txt")"

# 4. The patch, for documentation (the replace names ../nri-grpc).
{
	echo "containerd $CTRD_VERSION with nri-grpc's drop-in for pkg/adaptation (test/e2e/containerd-nri-grpc.sh)."
	echo "Apply in containerd's module source with patch -p1, point the replace at your checkout, then go mod tidy."
	echo
	for f in $EXPECTED_FILES go.mod; do
		diff -u --label "a/$f" --label "b/$f" "$orig/$f" "$src/$f" | sed "s|$checkout|../nri-grpc|g" || true
	done
} >"$out/containerd-$CTRD_VERSION-nri-grpc.patch"

# 5. Build containerd (-trimpath: the build cache does not depend on OUTDIR).
start=$(date +%s)
CGO_ENABLED=1 "$GO" build -trimpath -o "$out/bin/containerd" ./cmd/containerd || die "go build ./cmd/containerd failed"
log "containerd built in $(($(date +%s) - start)) s: $out/bin/containerd"
date -u +%Y-%m-%dT%H:%M:%SZ >"$out/complete"
