#!/usr/bin/env bash
# make doctor: checks every tool `make test` needs and names, for each one
# missing or too old, the command that installs it. Exits 1 if anything the
# suites need is missing. Versions come from the project's own files
# (go.mod, clients/rust/Cargo.toml, clients/python/pyproject.toml,
# clients/typescript/package.json).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=0
ok() { printf '  ok       %-10s %s\n' "$1" "$2"; }
bad() {
  printf '  MISSING  %-10s %s\n           install: %s\n' "$1" "$2" "$3"
  missing=1
}
note() { printf '  note     %-10s %s\n' "$1" "$2"; }

# ver_ge A B: version A >= version B (dotted numbers).
ver_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }

want_go=$(awk '/^go /{print $2}' go.mod)
want_rust=$(awk -F'"' '/^rust-version/{print $2; exit}' clients/rust/Cargo.toml)
want_py=$(sed -n 's/^requires-python = ">=\([0-9.]*\)".*/\1/p' clients/python/pyproject.toml)
want_node=$(sed -n 's/.*"node": ">=\([0-9.]*\)".*/\1/p' clients/typescript/package.json)

echo "nri-grpc: what \`make test\` needs"

for t in bash make git; do
  if command -v "$t" >/dev/null; then ok "$t" "$(command -v "$t")"; else bad "$t" "needed by the Makefile" "apt-get install $t"; fi
done

if command -v go >/dev/null; then
  v=$(go env GOVERSION | sed 's/^go//')
  if ver_ge "$v" "$want_go"; then ok go "$v (go.mod wants >= $want_go)"
  else bad go "$v is older than go.mod's $want_go" "a Go >= $want_go toolchain (GOTOOLCHAIN=go$want_go go version fetches it through the module proxy)"; fi
else
  bad go "not found (go.mod wants >= $want_go)" "a Go >= $want_go toolchain on PATH"
fi

if command -v gcc >/dev/null || command -v cc >/dev/null; then ok gcc "C compiler for cgo and -race"
else bad gcc "C compiler for cgo, which go test -race needs" "apt-get install gcc"; fi

if command -v node >/dev/null; then
  v=$(node --version | sed 's/^v//')
  if ver_ge "$v" "$want_node"; then ok node "$v (>= $want_node)"
  else bad node "$v is older than $want_node" "apt-get install nodejs (Debian 13 ships 20.x)"; fi
else
  bad node "not found (TypeScript SDK, buf from npm)" "apt-get install nodejs npm"
fi
if command -v npm >/dev/null; then ok npm "$(npm --version 2>/dev/null)"; else bad npm "not found" "apt-get install npm"; fi

py=${PYTHON:-python3}
if command -v "$py" >/dev/null; then
  v=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
  if ver_ge "$v" "$want_py"; then ok python "$v (>= $want_py)"
  else bad python "$v is older than $want_py" "apt-get install python3 (or set PYTHON= to a newer one)"; fi
  if "$py" -c 'import venv, ensurepip' 2>/dev/null; then ok venv "python -m venv with pip"
  else bad venv "python3 -m venv cannot install pip" "apt-get install python3-venv"; fi
else
  bad python "not found (Python SDK)" "apt-get install python3 python3-venv"
fi

if command -v cargo >/dev/null; then
  v=$(rustc --version 2>/dev/null | awk '{print $2}')
  if ver_ge "$v" "$want_rust"; then ok cargo "rustc $v (>= $want_rust)"
  else bad cargo "rustc $v is older than $want_rust" "rustup update stable (or apt-get install cargo from a newer Debian)"; fi
  if cargo fmt --version >/dev/null 2>&1; then ok rustfmt "$(cargo fmt --version 2>/dev/null)"
  else bad rustfmt "cargo fmt is missing (make rust-test checks formatting)" "rustup component add rustfmt (or apt-get install rustfmt)"; fi
else
  bad cargo "not found (Rust SDK)" "apt-get install cargo rustfmt"
fi

# End to end: only as root; the harness installs runc itself.
if [[ $(id -u) == 0 ]]; then
  if command -v runc >/dev/null; then ok runc "$(runc --version | head -n1)"
  elif command -v apt-get >/dev/null; then note runc "missing: make e2e installs it (apt-get install runc)"
  else bad runc "not found and no apt-get to install it" "your distribution's runc package"; fi
  ok root "make e2e runs containerd v2.4.2 (built from the Go module proxy on first use)"
else
  note e2e "not root: make test lists the e2e suite as skipped (containerd and runc need root)"
fi

if ((missing)); then
  echo "doctor: something is missing; install it with the command shown, then run make doctor again"
  exit 1
fi
echo "doctor: everything make test needs is here"
