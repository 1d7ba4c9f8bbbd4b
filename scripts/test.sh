#!/usr/bin/env bash
# Install mpvis and its test tools into .venv, then run every check CI runs:
# lint (ruff), types (mypy), layer contracts (import-linter) and the tests
# (pytest, GUI tests offscreen, real mpiexec runs).  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
echo "== ruff"; .venv/bin/ruff check mpvis tests benchmarks examples sample_traces
echo "== mypy"; .venv/bin/mypy
echo "== import-linter"; .venv/bin/lint-imports
echo "== pytest"
export QT_QPA_PLATFORM=offscreen
exec .venv/bin/python -m pytest "$@"
