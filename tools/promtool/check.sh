#!/usr/bin/env bash
# Checks the Prometheus alert rules (syntax, templates) and runs their unit tests
# (deploy/prometheus/tests/*.test.yml: series in, alerts out). Needs promtool on PATH:
# tools/promtool/install.sh installs it.
set -euo pipefail
cd "$(dirname "$0")/../.."

promtool check rules deploy/prometheus/alerts.yml
promtool test rules deploy/prometheus/tests/*.test.yml
