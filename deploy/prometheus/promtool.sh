#!/usr/bin/env bash
# promtool.sh [TOOL] prints the path of TOOL, promtool (the default: what
# `make rules-check` runs) or prometheus (the server the Kubernetes e2e
# suite runs):
#   1. $PROMTOOL (or $PROMETHEUS) when set;
#   2. TOOL on PATH (Debian's package prometheus installs /usr/bin/promtool
#      and /usr/bin/prometheus);
#   3. $BIN/TOOL (.tmp/bin), extracted from Debian's prometheus .deb
#      fetched with `apt-get download` when missing: only that binary, no
#      package installed, no service started. When the package lists do
#      not have it, root runs `apt-get update` first.
# Anything else it says goes to standard error.
set -euo pipefail

log() { echo "promtool.sh: $*" >&2; }
die() { log "$*"; exit 1; }

tool=${1:-promtool}
case $tool in
promtool) override=${PROMTOOL:-} ;;
prometheus) override=${PROMETHEUS:-} ;;
*) die "usage: promtool.sh [promtool|prometheus]" ;;
esac
if [[ -n $override ]]; then
  command -v "$override" >/dev/null || die "$override ($tool) is not executable"
  command -v "$override"
  exit 0
fi
if command -v "$tool" >/dev/null; then
  command -v "$tool"
  exit 0
fi
BIN=${BIN:?BIN (the directory of the extracted $tool) is not set}
if [[ -x $BIN/$tool ]]; then
  echo "$BIN/$tool"
  exit 0
fi
hint="install it with 'apt-get install prometheus' (Debian's $tool 2.42), or set PROMTOOL= or PROMETHEUS="
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "$tool is not installed and there is no apt-get/dpkg-deb: $hint"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=${EPOCHREALTIME/[.,]/}
download() { (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1); }
if ! download; then
  [[ $(id -u) == 0 ]] || die "$tool is not installed and 'apt-get download prometheus' failed (stale package lists? not root, so no apt-get update): $hint"
  log "apt-get update (the package lists have no prometheus)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  download || die "'apt-get download prometheus' failed: $hint"
fi
deb=$(ls "$tmp"/prometheus_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" "./usr/bin/$tool"
mkdir -p "$BIN"
install -m 0755 "$tmp/usr/bin/$tool" "$BIN/$tool"
us=$(( ${EPOCHREALTIME/[.,]/} - start ))
log "$(basename "$deb"): extracted $tool into $BIN in $((us / 1000000)).$((us / 100000 % 10))s ($("$BIN/$tool" --version 2>&1 | head -1))"
echo "$BIN/$tool"
