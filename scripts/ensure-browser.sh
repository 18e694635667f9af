#!/usr/bin/env bash
# Install Debian's Chromium (and a CJK font, so screenshots show Chinese) when they are missing.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
fc-list 2>/dev/null | grep -qiE "wqy|noto sans cjk" || need+=(fonts-wqy-microhei)
fc-list 2>/dev/null | grep -qi "emoji" || need+=(fonts-noto-color-emoji)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing ${need[*]} (Debian packages) for the browser tests"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
