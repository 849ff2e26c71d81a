#!/usr/bin/env bash
# The layers of src/ and which way their arrows point (see docs/ARCHITECTURE.md).
#
#   scripts/layers.sh           prints every edge "module -> module (uses)" found in `crate::`
#                               paths outside test code, then fails on an edge that points up
#                               a layer, on a web module naming `db`, or on a cycle.
#
# A module is a top-level module of src/ (src/x.rs or src/x/), or one of a layer folder's
# (src/base/, src/services/, src/web/: src/web/http/ is `http`). Test code (from `#[cfg(test)]`
# to the end of a file, and *_proptest.rs / tests.rs files) is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."

# Lowest first; a module may use modules of its own layer or below, never above.
LAYERS=(
  "clock format i18n logging metrics private_files secret traffic"
  "domain"
  "config"
  "db"
  "storage figures accounts audit request_log spam duplicates scan files oidc form_versions"
  "changes"
  "accept status effects worker lifecycle alert_rules check_config admin_forms reload healthcheck read_api browse conflicts effect_actions inbound spam_release"
  "state render"
  "http"
  "admin"
  "hooks"
  "app"
  "cli"
)

# The web layer's modules: they reach the database only through the services (`storage` names
# its pool and error type), never `db` itself.
WEB="state render http admin hooks"

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

# The folders that group the modules of one layer (their modules are the nodes).
LAYER_DIRS="base services web"

node_of_file() {
  local rest=${1#src/} group=${1#src/}
  group=${group%%/*}
  if [[ " $LAYER_DIRS " == *" $group "* ]]; then rest=${rest#"$group"/}; fi
  echo "$rest" | sed -E 's#^([^/.]+).*#\1#'
}

node_of_path() { # crate::x::y -> x, crate::services::accept::y -> accept, with_conn -> db
  local head=${1%%::*}
  case "$1" in
    with_conn*) echo "db" ;;
    *) if [[ " $LAYER_DIRS " == *" $head "* ]]; then local rest=${1#*::}; echo "${rest%%::*}"; else echo "$head"; fi ;;
  esac
}

edges=$(
  find src -name '*.rs' ! -name '*_proptest.rs' ! -name 'tests.rs' ! -path 'src/lib.rs' ! -path 'src/main.rs' |
    sort | while read -r file; do
      from=$(node_of_file "$file")
      awk '/^[[:space:]]*#\[cfg\(test\)\]/ { exit } !/^[[:space:]]*\/\// { print }' "$file" |
        grep -oE 'crate::[a-z_][a-z0-9_]*(::[a-z_][a-z0-9_]*)?(::[a-z_][a-z0-9_]*)?' | sed 's/^crate:://' | while read -r path; do
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
  elif [ "$to" = "db" ] && [[ " $WEB " == *" $from "* ]]; then
    mark="  <- FORBIDDEN: the web names the database (call a service)"; status=1
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
