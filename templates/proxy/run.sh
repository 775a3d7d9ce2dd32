#!/bin/sh
# Starts the upstream app and oauth2-proxy in front of it, both configured by oauth2-proxy.env.
# Containers instead: `docker compose up` (docker-compose.yml uses the same env file).
set -eu
cd "$(dirname "$0")"

OAUTH2_PROXY_BIN=${OAUTH2_PROXY_BIN:-oauth2-proxy}
if ! command -v "$OAUTH2_PROXY_BIN" >/dev/null 2>&1; then
  echo "run.sh: oauth2-proxy not found; install it (https://oauth2-proxy.github.io/oauth2-proxy/installation)" >&2
  echo "        or set OAUTH2_PROXY_BIN, or run 'docker compose up'." >&2
  exit 127
fi

# oauth2-proxy reads every OAUTH2_PROXY_* variable from its environment. The file is read the way
# `docker run --env-file` reads it (one KEY=value per line, the value literal, # lines skipped),
# not sourced: values hold spaces and are never quoted.
while IFS= read -r line || [ -n "$line" ]; do
  case $line in
    '' | '#'*) continue ;;
  esac
  export "$line"
done < ./oauth2-proxy.env

node upstream.js &
upstream_pid=$!
trap 'kill "$upstream_pid" 2>/dev/null || true' EXIT
trap 'exit 143' INT TERM

"$OAUTH2_PROXY_BIN"
