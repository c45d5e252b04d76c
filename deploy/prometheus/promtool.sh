#!/usr/bin/env bash
# promtool.sh prints the path of the promtool `make rules-check` runs:
#   1. $PROMTOOL when set;
#   2. promtool on PATH (Debian's package prometheus installs /usr/bin/promtool);
#   3. $BIN/promtool (.tmp/bin), extracted from Debian's prometheus .deb
#      fetched with `apt-get download` when missing: only the promtool binary,
#      no package installed, no service started. When the package lists do
#      not have it, root runs `apt-get update` first.
# Anything else it says goes to standard error.
set -euo pipefail

log() { echo "promtool.sh: $*" >&2; }
die() { log "$*"; exit 1; }

if [[ -n ${PROMTOOL:-} ]]; then
  command -v "$PROMTOOL" >/dev/null || die "PROMTOOL=$PROMTOOL is not executable"
  command -v "$PROMTOOL"
  exit 0
fi
if command -v promtool >/dev/null; then
  command -v promtool
  exit 0
fi
BIN=${BIN:?BIN (the directory of the extracted promtool) is not set}
if [[ -x $BIN/promtool ]]; then
  echo "$BIN/promtool"
  exit 0
fi
hint="install it with 'apt-get install prometheus' (Debian's promtool 2.42), or set PROMTOOL="
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "promtool is not installed and there is no apt-get/dpkg-deb: $hint"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=${EPOCHREALTIME/[.,]/}
download() { (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1); }
if ! download; then
  [[ $(id -u) == 0 ]] || die "promtool is not installed and 'apt-get download prometheus' failed (stale package lists? not root, so no apt-get update): $hint"
  log "apt-get update (the package lists have no prometheus)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  download || die "'apt-get download prometheus' failed: $hint"
fi
deb=$(ls "$tmp"/prometheus_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" ./usr/bin/promtool
mkdir -p "$BIN"
install -m 0755 "$tmp/usr/bin/promtool" "$BIN/promtool"
us=$(( ${EPOCHREALTIME/[.,]/} - start ))
log "$(basename "$deb"): extracted promtool into $BIN in $((us / 1000000)).$((us / 100000 % 10))s ($("$BIN/promtool" --version 2>&1 | head -1))"
echo "$BIN/promtool"
