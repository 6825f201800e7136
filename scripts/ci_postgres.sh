#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (docs/scale.md, "PostgreSQL").
#
#   source scripts/ci_postgres.sh   # installs PostgreSQL if absent (Debian package),
#                                   # starts a cluster in a temporary folder on a unix
#                                   # socket, exports DPEVOLVE_TEST_POSTGRES (a URL) and
#                                   # stops the server and removes the folder at exit.
#
# Run as root (CI): the cluster belongs to the `postgres` user, as initdb requires.
# Run as another user: the cluster is that user's.
set -euo pipefail

_pg_bin() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$found" ] && [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
        found=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    fi
    if [ -z "$found" ]; then
        echo "ci_postgres: PostgreSQL is not installed (apt-get install postgresql)" >&2
        return 1
    fi
    echo "$found"
}

PG_BIN=$(_pg_bin)
PG_DIR=$(mktemp -d /tmp/dpevolve-pg.XXXXXX)
if [ "$(id -u)" = 0 ]; then
    PG_USER=postgres
    chown "$PG_USER" "$PG_DIR"
    _as_pg() { runuser -u "$PG_USER" -- "$@"; }
else
    PG_USER=$(id -un)
    _as_pg() { "$@"; }
fi
_as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U "$PG_USER" -A trust --no-sync -E UTF8 \
    --locale=C >"$PG_DIR/initdb.log" 2>&1
_as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -s start \
    -o "-c listen_addresses='' -c unix_socket_directories='$PG_DIR' -c fsync=off"
_as_pg "$PG_BIN/createdb" -h "$PG_DIR" -U "$PG_USER" dpevolve_test

ci_postgres_stop() {
    _as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -s stop || true
    rm -rf "$PG_DIR"
}
trap ci_postgres_stop EXIT

# libpq's URL form for a unix socket: the folder as the host parameter.
export DPEVOLVE_TEST_POSTGRES="postgresql://$PG_USER@/dpevolve_test?host=$PG_DIR"
echo "ci_postgres: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') at $PG_DIR"
