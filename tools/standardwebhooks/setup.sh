#!/usr/bin/env bash
# The Standard Webhooks reference library (Python) in a virtualenv of its own, for the
# webhook tests: they verify every delivery conveyor signs with it, as a customer's
# receiver would. Cached in /var/tmp (CONVEYOR_SWH_VENV) like the cargo target.
set -euo pipefail
VENV=${CONVEYOR_SWH_VENV:-/var/tmp/conveyor-swh}
VERSION=1.3.0
if "$VENV/bin/python" -c "import standardwebhooks, importlib.metadata as m; assert m.version('standardwebhooks') == '$VERSION'" 2>/dev/null; then
  echo "standardwebhooks $VERSION ready in $VENV"
  exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c "import ensurepip" 2>/dev/null; then
  apt-get install -y -q python3-venv >/dev/null
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "standardwebhooks==$VERSION"
echo "standardwebhooks $VERSION installed in $VENV"
