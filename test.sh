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
#          nodejs npm                (only if Node.js is missing: runs ALTCHA's reference library)
#          postgresql-N-auto-failover (pg_auto_failover for the failover tests, N = the installed
#                                    PostgreSQL's major version; scripts/failover-cluster.sh)
#          pgbouncer                 (the chaos run's pooler: `cargo bench --bench chaos`)
#          clamav-daemon             (clamd: the upload scanner's tests start their own daemons)
#   pip:   schemathesis              (into target/test-tools/venv unless already on PATH)
#          standardwebhooks          (into target/test-tools/venv: verifies outbound webhooks)
#   npm:   altcha-lib                (into target/test-tools/npm: solutions the captcha tests post)
#          oidc-provider             (into target/test-tools/npm: the OpenID provider of the admin's
#                                    OIDC sign-in tests, tests/fixtures/oidc/provider.mjs)
#   cargo: cargo-nextest
set -euo pipefail
cd "$(dirname "$0")"

say() { echo "test.sh: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
pg_major=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)
command -v pg_autoctl >/dev/null 2>&1 || [ -z "$pg_major" ] || missing+=("postgresql-$pg_major-auto-failover")
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
command -v clamd >/dev/null 2>&1 || [ -x /usr/sbin/clamd ] || missing+=(clamav-daemon)
# CJK glyphs in the screenshots of the zh-TW and ja pages (boxes without a CJK font).
fc-list :lang=zh-tw 2>/dev/null | grep -q . || missing+=(fonts-noto-cjk)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The prometheus package would start a Prometheus server, pgbouncer's a pooler on 6432,
# clamav-daemon's a clamd and freshclam (which downloads signatures); only the programs are
# wanted (the tests and the chaos run start their own).
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
  as_root systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" pgbouncer "* ]] && command -v systemctl >/dev/null 2>&1; then
  as_root systemctl disable --now pgbouncer >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" clamav-daemon "* ]] && command -v systemctl >/dev/null 2>&1; then
  as_root systemctl disable --now clamav-daemon clamav-daemon.socket clamav-freshclam >/dev/null 2>&1 || true
fi

# From PyPI, in a virtual environment of its own: schemathesis (unless already on PATH) and
# standardwebhooks (the outbound webhook tests verify signatures with it).
venv=target/test-tools/venv
wanted=(standardwebhooks)
command -v schemathesis >/dev/null 2>&1 || wanted+=(schemathesis)
[ -x "$venv/bin/python" ] || { say "making $venv"; python3 -m venv "$venv"; }
for package in "${wanted[@]}"; do
  if ! "$venv/bin/pip" show --quiet "$package" >/dev/null 2>&1; then
    say "installing $package into $venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$package"
  fi
done
command -v schemathesis >/dev/null 2>&1 || export PATH="$PWD/$venv/bin:$PATH"

# ALTCHA's reference library, from npm, solves the challenges the captcha tests post.
if [ ! -f target/test-tools/npm/node_modules/altcha-lib/package.json ]; then
  say "installing altcha-lib into target/test-tools/npm"
  mkdir -p target/test-tools/npm
  npm install --silent --no-audit --no-fund --prefix target/test-tools/npm altcha-lib@1.4.1
fi
# oidc-provider (OpenID-certified) is the real provider the admin's OIDC sign-in tests run.
if [ ! -f target/test-tools/npm/node_modules/oidc-provider/package.json ]; then
  say "installing oidc-provider into target/test-tools/npm"
  mkdir -p target/test-tools/npm
  npm install --silent --no-audit --no-fund --prefix target/test-tools/npm oidc-provider@9.13.3
fi

# cargo-nextest runs the tests (one process per test).
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest

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
