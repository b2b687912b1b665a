#!/usr/bin/env bash
# The package installs with pip as a user installs it, into a fresh virtual environment, and
# the installed copy (not the checkout) imports, carries py.typed and talks to nothing at
# import. Offline: setuptools comes from the system (--no-build-isolation), nothing from an index.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# Debian's python3 (with python3-venv, -setuptools and -wheel: scripts/install_deps.sh --tests).
python=${PYTHON:-/usr/bin/python3}
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --no-build-isolation --no-index --no-deps "$here"
cd "$venv"  # away from the checkout, so the import finds the installed package
"$venv/bin/python" - "$here" <<'PY'
import os, sys
import perfscope
checkout = sys.argv[1]
where = os.path.dirname(perfscope.__file__)
assert not where.startswith(checkout), f"imported the checkout, not the installed package: {where}"
assert os.path.exists(os.path.join(where, "py.typed")), "py.typed is not installed"
from importlib.metadata import version
assert version("perfscope-client") == perfscope.__version__, (version("perfscope-client"), perfscope.__version__)
c = perfscope.Client("http://127.0.0.1:9")
c.inference("m", latency_ms=1.0)
c.close(timeout=0.1)
assert c.stats().dropped == 1, c.stats()
print("installed perfscope", perfscope.__version__, "at", where)
PY
