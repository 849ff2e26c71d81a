#!/usr/bin/env bash
# The layers of src/ and which way their arrows point (see docs/ARCHITECTURE.md).
#
#   scripts/layers.sh           prints every edge "module -> module (uses)" found in `crate::`
#                               paths outside test code, then fails on an edge that points up
#                               a layer or on a cycle.
#
# A module is a top-level module of src/ (src/x.rs or src/x/); `app::state` counts as its own
# module because it sits below the areas that `app` mounts. Test code (from `#[cfg(test)]`
# to the end of a file, and *_proptest.rs / tests.rs files) is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."

# Lowest first; a module may use modules of its own layer or below, never above.
LAYERS=(
  "clock format i18n logging secret"
  "domain"
  "config"
  "db"
  "request_log spam duplicates"
  "accept status effects worker lifecycle alert_rules check_config"
  "app::state render"
  "http"
  "admin"
  "hooks"
  "app"
  "cli"
)

# Edges that still point up, each with why; remove a line when its edge is gone.
KNOWN=(
)

rank_of() {
  local i
  for i in "${!LAYERS[@]}"; do
    for m in ${LAYERS[$i]}; do [ "$m" = "$1" ] && { echo "$i"; return; }; done
  done
  echo "?"
}

node_of_file() {
  case "$1" in
    src/app/state.rs) echo "app::state" ;;
    *) echo "$1" | sed -E 's#^src/([^/.]+).*#\1#' ;;
  esac
}

node_of_path() { # crate::x::y -> x (app::state for crate::app::state), with_conn -> db
  case "$1" in
    app::state*) echo "app::state" ;;
    with_conn*) echo "db" ;;
    *) echo "${1%%::*}" ;;
  esac
}

edges=$(
  find src -name '*.rs' ! -name '*_proptest.rs' ! -name 'tests.rs' ! -path 'src/lib.rs' ! -path 'src/main.rs' |
    sort | while read -r file; do
      from=$(node_of_file "$file")
      awk '/^[[:space:]]*#\[cfg\(test\)\]/ { exit } !/^[[:space:]]*\/\// { print }' "$file" |
        grep -oE 'crate::[a-z_][a-z0-9_]*(::[a-z_][a-z0-9_]*)?' | sed 's/^crate:://' | while read -r path; do
          to=$(node_of_path "$path")
          [ "$to" != "$from" ] && echo "$from $to"
        done || true
    done | sort | uniq -c | awk '{ print $2, $3, $1 }'
)

status=0
while read -r from to uses; do
  [ -z "$from" ] && continue
  rf=$(rank_of "$from"); rt=$(rank_of "$to")
  mark=""
  if [ "$rf" = "?" ] || [ "$rt" = "?" ]; then
    mark="  <- not in a layer"; status=1
  elif [ "$rt" -gt "$rf" ]; then
    if printf '%s\n' "${KNOWN[@]:-}" | grep -q "^$from -> $to:"; then
      mark="  <- up a layer (known, see KNOWN)"
    else
      mark="  <- FORBIDDEN: up a layer"; status=1
    fi
  fi
  echo "$from -> $to ($uses)$mark"
done <<< "$edges"

# Nor may edges form a cycle (within a layer, or through a known edge).
known_pairs=$(printf '%s\n' "${KNOWN[@]:-}" | sed -nE 's/^([a-z_:]+) -> ([a-z_:]+):.*/\1 \2/p')
if ! cycles=$(echo "$edges" | awk 'NF { print $1, $2 }' | grep -vxF "$known_pairs" | tsort 2>&1 >/dev/null) ||
  [ -n "$cycles" ]; then
  echo "FORBIDDEN: a cycle among modules:"; echo "$cycles"; status=1
fi
[ "$status" -eq 0 ] && echo "layers: every arrow points down" || echo "layers: fix the edges marked above"
exit "$status"
