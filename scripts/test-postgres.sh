#!/usr/bin/env bash
# Makes sure the tests have a PostgreSQL server and records its URL in
# .test-servers/postgres.url (the tests read it; SPOOL_TEST_POSTGRES_URL
# overrides). It uses the server on 127.0.0.1:5432 when one answers;
# otherwise it installs PostgreSQL from Debian packages if needed and starts
# a private cluster in a temporary directory, on a free port, as a non-root
# user (initdb refuses root). Safe to run again: a cluster it started and
# that still runs is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .test-servers
out=.test-servers/postgres.url

answers() { # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

if [ -n "${SPOOL_TEST_POSTGRES_URL:-}" ]; then
  echo "postgres: using SPOOL_TEST_POSTGRES_URL"
  exit 0
fi
if [ "${SPOOL_TEST_POSTGRES_PRIVATE:-}" != 1 ] && answers 127.0.0.1 5432; then
  echo "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" > "$out"
  echo "postgres: using the server on 127.0.0.1:5432"
  exit 0
fi
if [ -s .test-servers/postgres.port ] && answers 127.0.0.1 "$(cat .test-servers/postgres.port)"; then
  echo "postgres: reusing the private cluster on port $(cat .test-servers/postgres.port)"
  exit 0
fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "postgres: installing PostgreSQL from Debian packages"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi


dir=$(mktemp -d /tmp/spool-test-postgres.XXXXXX)
as=()
if [ "$(id -u)" -eq 0 ]; then
  chown nobody "$dir"
  as=(runuser -u nobody --)
fi
"${as[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log"; exit 1; }
# A port below the range the kernel hands out to outgoing connections
# (which could take it between the check and the bind), the first that
# nothing answers on; the next one if the bind fails all the same.
# fsync off: a test cluster never needs to survive a power cut, and the
# tests then wait for no disk.
port=25432
for try in 1 2 3 4 5; do
  while answers 127.0.0.1 "$port"; do port=$((port + 1)); done
  if "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=300" start >/dev/null; then
    break
  fi
  [ "$try" -lt 5 ] || { cat "$dir/server.log"; exit 1; }
  port=$((port + 1))
done
echo "$port" > .test-servers/postgres.port
echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" > "$out"
echo "postgres: started a private cluster on 127.0.0.1:$port (data in $dir)"
