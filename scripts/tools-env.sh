# Source this file (bash or zsh): `. scripts/tools-env.sh`
# Puts idforge's tools/bin (or $IDFORGE_TOOLS_DIR/bin), and tools/node/bin when ensure-tools.sh installed Node.js
# there, first on PATH, and sets the Pulumi variables that keep the
# CLI offline and self-contained. Run scripts/ensure-tools.sh first to build the tools.
# test/support/tools.ts (pulumiEnv) sets the same variables for tests.

if [ -n "${BASH_SOURCE:-}" ]; then
  _idforge_here="$BASH_SOURCE"
elif [ -n "${ZSH_VERSION:-}" ]; then
  # shellcheck disable=SC2296
  _idforge_here="${(%):-%x}"
else
  # POSIX sh cannot tell a sourced file its own path: assume it is sourced from the repository root.
  _idforge_here="$PWD/scripts/tools-env.sh"
fi
_idforge_root="$(cd "$(dirname "$_idforge_here")/.." && pwd)"

IDFORGE_TOOLS_BIN="${IDFORGE_TOOLS_DIR:-$_idforge_root/tools}/bin"
case "$IDFORGE_TOOLS_BIN" in /*) ;; *) IDFORGE_TOOLS_BIN="$_idforge_root/$IDFORGE_TOOLS_BIN" ;; esac
export IDFORGE_TOOLS_BIN
case "$PATH" in
  "$IDFORGE_TOOLS_BIN":*) ;;
  *) PATH="$IDFORGE_TOOLS_BIN:$PATH" ;;
esac
# Node.js 24, when ensure-tools.sh installed it because the machine's node is older than 22.
if [ -x "$IDFORGE_TOOLS_BIN/../node/bin/node" ]; then
  _idforge_node_bin="$(cd "$IDFORGE_TOOLS_BIN/../node/bin" && pwd)"
  case "$PATH" in
    "$_idforge_node_bin":*) ;;
    *) PATH="$_idforge_node_bin:$PATH" ;;
  esac
  unset _idforge_node_bin
fi
export PATH

# No network calls to check for a newer CLI, and never download plugins: everything comes from tools/bin.
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

unset _idforge_here _idforge_root
