#!/usr/bin/env bash
# Install mpvis and its test tools into .venv, then run every check CI runs:
# lint (ruff), types (mypy), layer contracts (import-linter) and the tests
# (pytest, GUI tests offscreen, real mpiexec runs).  Extra arguments go to pytest.
# Then the Qt-free job: the core alone (`pip install mpvis`, no `gui` extra) in
# .venv-core, proving it installs without Qt and passes its fast tests and real
# headless `mpvis run`s (docs/qt-optional.md).  MPVIS_SKIP_CORE_JOB=1 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
echo "== ruff"; .venv/bin/ruff check mpvis tests benchmarks examples sample_traces
echo "== mypy"; .venv/bin/mypy
echo "== import-linter"; .venv/bin/lint-imports
echo "== pytest"
export QT_QPA_PLATFORM=offscreen
.venv/bin/python -m pytest "$@"
if [ "${MPVIS_SKIP_CORE_JOB:-}" = 1 ]; then exit 0; fi
echo "== core without Qt"
python3 -m venv .venv-core
.venv-core/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test-core]'
if .venv-core/bin/python -c 'import PySide6' 2>/dev/null; then
    echo "the core job's venv has Qt: it proves nothing" >&2; exit 1
fi
.venv-core/bin/python -m pytest -q -p no:cacheprovider -m 'not slow' tests
.venv-core/bin/python -m pytest -q -p no:cacheprovider \
    tests/cli/test_run_mpiexec.py tests/cli/test_first_start.py
