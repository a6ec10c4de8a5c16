#!/usr/bin/env bash
# Installs promtool (Prometheus' rule checker and rule unit-test runner) from Debian's
# `prometheus` package, only if `promtool` is not on PATH yet. The package also ships
# the Prometheus server and enables its service: this script stops and disables it, as
# only the promtool binary is wanted. Idempotent: safe to run again.
set -euo pipefail

if ! command -v promtool >/dev/null 2>&1; then
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        sudo=(sudo)
    fi
    # policy-rc.d usually keeps a container from starting the service; the checks
    # below cover the hosts where it does start.
    ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus

    if command -v systemctl >/dev/null 2>&1; then
        ${sudo[@]+"${sudo[@]}"} systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
    # No prometheus server must keep running: it was not asked for.
    if pgrep -x prometheus >/dev/null 2>&1; then
        ${sudo[@]+"${sudo[@]}"} pkill -x prometheus || true
    fi
fi

promtool --version
