#!/usr/bin/env bash
# Installs what BenchmarkSlowAttack needs from Debian's packages:
# slowhttptest (the attack tool) and nginx (a peer). Waits for another
# apt-get or dpkg to finish first. Does nothing when both are present.
set -euo pipefail
need=()
command -v slowhttptest >/dev/null 2>&1 || need+=(slowhttptest)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "idle_attack_setup: apt-get not found; install ${need[*]} by hand" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
while pgrep -x apt-get >/dev/null || pgrep -x dpkg >/dev/null; do sleep 5; done
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
# The package starts nginx on port 80; the suite runs its own instances.
if command -v systemctl >/dev/null 2>&1; then $sudo systemctl stop nginx 2>/dev/null || true; fi
