#!/usr/bin/env bash
# Installs the peers' servers for bench/durable from Debian's packages:
# redis-server (asynq) and PostgreSQL (river). natsjobs needs nothing: its
# server is embedded, or this test binary run as a nats-server process.
# Nothing is started here: each benchmark starts its own servers on
# loopback with temporary data directories and stops them afterwards.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -eq 0 ]; then
  echo "bench/durable: redis-server and PostgreSQL present"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "bench/durable: missing ${missing[*]}; install them as root with apt-get" >&2
  exit 1
fi
echo "bench/durable: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
# Debian's packages may start their services: the benchmarks start their
# own, so stop those (no systemd here, or a service manager that ignores it).
service redis-server stop >/dev/null 2>&1 || true
service postgresql stop >/dev/null 2>&1 || true
