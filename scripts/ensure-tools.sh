#!/usr/bin/env bash
# Makes sure the external tools idforge's tests and demos run are present, then prints where they are.
#
#   scripts/ensure-tools.sh            install what is missing, print a summary (stdout)
#   IDFORGE_TOOLS_DIR=/x scripts/...   put built tools in /x/bin instead of tools/bin
#
# Idempotent, and fast when everything is there: Debian packages are installed only when missing (one
# `apt-get update` first, only then); Go tools are rebuilt only when the binary is missing, reports the wrong
# version, or was built from different wrapper sources (a stamp file beside it records what it was built from).
# GOPATH and GOCACHE keep their defaults so the module and build caches persist: a fresh clone relinks quickly.
#
# What and why:
#   chromium                       Debian's; playwright-core drives /usr/bin/chromium
#   libnss-myhostname              so *.localhost (tenant subdomains) resolves to loopback for every process
#   postgresql                     only if no postgres/initdb binary exists (the scale-out storage backend)
#   pulumi                         built from scripts/go/pulumi (wrapper module pinning pkg/v3 + sdk/v3)
#   pulumi-language-nodejs         built from scripts/go/pulumi-language-nodejs (see its main.go for why)
#   pulumi-resource-pulumi-nodejs  the dynamic-provider launcher shipped in node_modules/@pulumi/pulumi
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

mkdir -p "$BIN" || die "cannot create $BIN"

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
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update (needed to install: $*)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 || die "apt-get update failed"
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "$@" >&2 \
    || die "apt-get install $* failed"
}

deb_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Chromium: the browser the e2e tests drive.
if [ ! -x /usr/bin/chromium ]; then
  apt_install chromium
  [ -x /usr/bin/chromium ] || die "chromium was installed but /usr/bin/chromium is missing"
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

# ---------------------------------------------------------------------------------------------------------------
# Go tools

if ! command -v go >/dev/null 2>&1; then
  die "go is not on PATH (needed to build pulumi, pulumi-language-nodejs and oauth2-proxy)"
fi

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
# Builds into a temporary file and renames, so an interrupted build never leaves a half-written tool behind.
finish_build() { # tmp, binary, stamp
  mv -f "$1" "$2" && printf '%s\n' "$3" >"$2.stamp"
}

# pulumi: the wrapper module pins pkg/v3 and sdk/v3 and repeats pkg's replace directives (go install of
# pkg/v3/cmd/pulumi refuses modules with replace directives).
PULUMI_MOD="$ROOT/scripts/go/pulumi"
PULUMI_STAMP="$(stamp_for pulumi "$PULUMI_VERSION" "$PULUMI_MOD/go.mod" "$PULUMI_MOD/go.sum")"
if ! stamp_ok "$BIN/pulumi" "$PULUMI_STAMP" \
  || [ "$("$BIN/pulumi" version 2>/dev/null || true)" != "$PULUMI_VERSION" ]; then
  log "building pulumi $PULUMI_VERSION (first build takes several minutes; later ones relink from the Go cache)"
  go build -C "$PULUMI_MOD" -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
    -o "$BIN/.pulumi.tmp" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
    || die "building pulumi $PULUMI_VERSION from scripts/go/pulumi failed"
  finish_build "$BIN/.pulumi.tmp" "$BIN/pulumi" "$PULUMI_STAMP"
  got="$("$BIN/pulumi" version 2>&1)" || die "$BIN/pulumi version failed: $got"
  [ "$got" = "$PULUMI_VERSION" ] || die "$BIN/pulumi reports version '$got', expected $PULUMI_VERSION"
fi

# pulumi-language-nodejs: idforge's own host (the upstream module is not served by the module proxy here).
LANG_MOD="$ROOT/scripts/go/pulumi-language-nodejs"
LANG_STAMP="$(stamp_for pulumi-language-nodejs "$PULUMI_VERSION" \
  "$LANG_MOD/go.mod" "$LANG_MOD/go.sum" "$LANG_MOD"/*.go)"
if ! stamp_ok "$BIN/pulumi-language-nodejs" "$LANG_STAMP"; then
  log "building pulumi-language-nodejs"
  go build -C "$LANG_MOD" -trimpath -ldflags "-s -w -X main.version=${PULUMI_VERSION#v}" \
    -o "$BIN/.pulumi-language-nodejs.tmp" . \
    || die "building pulumi-language-nodejs from scripts/go/pulumi-language-nodejs failed"
  finish_build "$BIN/.pulumi-language-nodejs.tmp" "$BIN/pulumi-language-nodejs" "$LANG_STAMP"
fi

# oauth2-proxy: cgo so that Go uses the system resolver (libnss-myhostname) for *.localhost. Built from a wrapper
# module (go.mod + go.sum pin the tag and every dependency): `go install ...@tag` would first ask the module proxy
# for the version list, which the proxy reachable here refuses.
OAUTH2_MOD="$ROOT/scripts/go/oauth2-proxy"
grep -Eq "^require github.com/oauth2-proxy/oauth2-proxy/v7 ${OAUTH2_PROXY_VERSION}( |$)" "$OAUTH2_MOD/go.mod" \
  || die "scripts/go/oauth2-proxy/go.mod does not require oauth2-proxy $OAUTH2_PROXY_VERSION (the pin in scripts/tool-versions.env); run: cd scripts/go/oauth2-proxy && go get github.com/oauth2-proxy/oauth2-proxy/v7@$OAUTH2_PROXY_VERSION && go mod tidy"
OAUTH2_STAMP="$(stamp_for oauth2-proxy "$OAUTH2_PROXY_VERSION" "$OAUTH2_MOD/go.mod" "$OAUTH2_MOD/go.sum")"
if ! stamp_ok "$BIN/oauth2-proxy" "$OAUTH2_STAMP" \
  || ! "$BIN/oauth2-proxy" --version 2>/dev/null | grep -q "^oauth2-proxy $OAUTH2_PROXY_VERSION "; then
  command -v cc >/dev/null 2>&1 || die "no C compiler (cc) on PATH: oauth2-proxy is built with CGO_ENABLED=1 (apt-get install gcc)"
  log "building oauth2-proxy $OAUTH2_PROXY_VERSION"
  CGO_ENABLED=1 go build -C "$OAUTH2_MOD" -trimpath \
    -ldflags "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$OAUTH2_PROXY_VERSION" \
    -o "$BIN/.oauth2-proxy.tmp" github.com/oauth2-proxy/oauth2-proxy/v7 \
    || die "building oauth2-proxy $OAUTH2_PROXY_VERSION from scripts/go/oauth2-proxy failed"
  finish_build "$BIN/.oauth2-proxy.tmp" "$BIN/oauth2-proxy" "$OAUTH2_STAMP"
  got="$("$BIN/oauth2-proxy" --version 2>&1)" || die "$BIN/oauth2-proxy --version failed: $got"
  case "$got" in
    "oauth2-proxy $OAUTH2_PROXY_VERSION "*) ;;
    *) die "$BIN/oauth2-proxy reports '$got', expected oauth2-proxy $OAUTH2_PROXY_VERSION" ;;
  esac
fi

# ---------------------------------------------------------------------------------------------------------------
# pulumi-resource-pulumi-nodejs: the engine runs dynamic providers through this launcher, found on PATH. It is
# a small shell script inside @pulumi/pulumi; link it so it always matches the installed SDK. It resolves
# @pulumi/pulumi/cmd/dynamic-provider from its working directory (the Pulumi program's directory).
SDK_DIR="$ROOT/node_modules/@pulumi/pulumi"
[ -f "$SDK_DIR/package.json" ] || die "$SDK_DIR is missing: run npm install (or npm ci) in $ROOT first"
SDK_VERSION="v$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$SDK_DIR/package.json" | head -n1)"
[ "$SDK_VERSION" = "$PULUMI_VERSION" ] \
  || die "npm @pulumi/pulumi is $SDK_VERSION but scripts/tool-versions.env pins the CLI at $PULUMI_VERSION; keep them equal"
DYN_SRC="$SDK_DIR/pulumi-resource-pulumi-nodejs"
[ -f "$DYN_SRC" ] || die "$DYN_SRC not found in the installed @pulumi/pulumi"
[ -x "$DYN_SRC" ] || chmod +x "$DYN_SRC" || die "cannot make $DYN_SRC executable"
if [ "$(readlink "$BIN/pulumi-resource-pulumi-nodejs" 2>/dev/null || true)" != "$DYN_SRC" ]; then
  ln -sfn "$DYN_SRC" "$BIN/pulumi-resource-pulumi-nodejs" || die "cannot link $DYN_SRC into $BIN"
fi

# ---------------------------------------------------------------------------------------------------------------
# Summary (stdout): name, path, version.

first_line() { "$@" 2>/dev/null | head -n1; }
summary() { printf '%-30s %-60s %s\n' "$1" "$2" "$3"; }
summary "tool" "path" "version"
summary pulumi "$BIN/pulumi" "$(first_line "$BIN/pulumi" version)"
summary pulumi-language-nodejs "$BIN/pulumi-language-nodejs" "$(first_line "$BIN/pulumi-language-nodejs" --version)"
summary pulumi-resource-pulumi-nodejs "$BIN/pulumi-resource-pulumi-nodejs" "@pulumi/pulumi $SDK_VERSION"
summary oauth2-proxy "$BIN/oauth2-proxy" "$(first_line "$BIN/oauth2-proxy" --version)"
summary chromium /usr/bin/chromium "$(first_line /usr/bin/chromium --version)"
summary postgres "$POSTGRES_BIN_DIR/postgres" "$(first_line "$POSTGRES_BIN_DIR/postgres" --version)"
summary acme.localhost "(nss myhostname)" "$LOCALHOST_ADDRS"
echo "To use them in a shell: . scripts/tools-env.sh"
exit 0
}
