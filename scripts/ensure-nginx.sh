#!/usr/bin/env bash
# Install Debian's nginx (the load balancer `python -m ui.cluster` starts) when it is missing.
# Only the binary is used: the package's own service is not started, and ui.cluster writes its
# configuration into a temporary directory that it removes at exit.
set -euo pipefail
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
  exit 0
fi
echo "installing nginx (Debian package) for the replicas' load balancer"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d answer 101: do not start the distribution's nginx service during installation.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 \
  || $sudo apt-get install -y -qq --no-install-recommends nginx >/dev/null
