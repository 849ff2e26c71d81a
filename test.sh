#!/usr/bin/env bash
# The test command. On a fresh Debian machine with Rust and PostgreSQL installed it installs
# what the tests need and is missing, starts PostgreSQL if it is installed but down, then
# runs every test with `cargo nextest run` (arguments are passed on, e.g. `./test.sh -E
# 'test(/openapi/)'`). Needs root or sudo for apt-get and for starting PostgreSQL.
#
#   apt:   chromium chromium-driver  (the admin's browser test, headless)
#          fonts-noto-cjk            (Chinese and Japanese text in the browser tests' screenshots)
#          prometheus                (promtool: `promtool check/test rules` on the alert rules)
#          python3-venv              (only if Python cannot make a virtual environment)
#   pip:   schemathesis              (into target/test-tools/venv unless already on PATH)
#   cargo: cargo-nextest
#          diesel_cli with bundled SQLite (the check that src/db/schema.rs matches the migrations)
set -euo pipefail
cd "$(dirname "$0")"

say() { echo "test.sh: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# CJK glyphs in the screenshots of the zh-TW and ja pages (boxes without a CJK font).
fc-list :lang=zh-tw 2>/dev/null | grep -q . || missing+=(fonts-noto-cjk)
command -v schemathesis >/dev/null 2>&1 || [ -x target/test-tools/venv/bin/schemathesis ] ||
  python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The prometheus package would start a Prometheus server; only promtool is wanted.
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
  as_root systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi

# schemathesis, from PyPI, in a virtual environment of its own.
if ! command -v schemathesis >/dev/null 2>&1; then
  if [ ! -x target/test-tools/venv/bin/schemathesis ]; then
    say "installing schemathesis into target/test-tools/venv"
    python3 -m venv target/test-tools/venv
    target/test-tools/venv/bin/pip install --quiet --disable-pip-version-check schemathesis
  fi
  export PATH="$PWD/target/test-tools/venv/bin:$PATH"
fi

# cargo-nextest runs the tests (one process per test).
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest
# diesel's CLI prints the schema the test `schema_rs_matches_the_migrations` compares with
# src/db/schema.rs; SQLite built from source, so no system library is needed (a few minutes).
command -v diesel >/dev/null 2>&1 ||
  cargo install --locked diesel_cli --no-default-features --features sqlite-bundled

# PostgreSQL on 127.0.0.1:5432: start it if it is installed but down.
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  if [ -d /etc/postgresql ]; then
    say "starting PostgreSQL"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start
    for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
  fi
fi
pg_isready -h 127.0.0.1 -p 5432 || { say "PostgreSQL is not running on 127.0.0.1:5432"; exit 1; }

# The tests connect as `postgres` with trust auth (ONCEFORM_TEST_PG_URL overrides). Where the
# server asks for a password (Debian's default), a role of their own is made once.
if [ -z "${ONCEFORM_TEST_PG_URL:-}" ] &&
   ! PGCONNECT_TIMEOUT=5 psql -w -h 127.0.0.1 -U postgres -d postgres -Atc 'SELECT 1' >/dev/null 2>&1; then
  say "no trust auth for postgres on 127.0.0.1: using role onceform_test"
  as_root runuser -u postgres -- psql -q -d postgres -c "DO \$\$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'onceform_test') THEN
        CREATE ROLE onceform_test LOGIN CREATEDB PASSWORD 'onceform_test';
      END IF; END \$\$;"
  export ONCEFORM_TEST_PG_URL="postgres://onceform_test:onceform_test@127.0.0.1:5432/postgres"
fi

exec cargo nextest run "$@"
