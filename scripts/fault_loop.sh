#!/bin/sh
# The fault tests of issue 15 (docs/reliability.md), PASSES times in STREAMS
# sequences side by side, with a CPU-bound job beside them; stops nothing on a
# failure, prints one line per pass.  Usage: sh scripts/fault_loop.sh [PASSES] [STREAMS]
# (default 10 passes x 2 streams = 20).  Logs in ${FAULT_LOGS:-/tmp/mpvis-fault-loop}.
cd "$(dirname "$0")/.." || exit 2
PASSES=${1:-10}
STREAMS=${2:-2}
LOGS=${FAULT_LOGS:-/tmp/mpvis-fault-loop}
mkdir -p "$LOGS"
TESTS="tests/cli/test_no_orphans.py tests/cli/test_disk_faults.py tests/collector/test_faults.py
tests/collector/test_live.py::test_a_dropped_connection_loses_and_duplicates_nothing
tests/collector/test_live.py::test_the_central_process_drops_resent_batches
tests/collector/test_live.py::test_a_rank_that_dies_is_reported_and_its_trace_ends_there
tests/collector/test_tls.py
tests/cli/test_run_mpiexec.py::test_a_killed_rank_leaves_a_valid_trace_marked_dead
tests/cli/test_run_mpiexec.py::test_ctrl_c_stops_the_ranks_and_keeps_the_trace
tests/model/test_lost_sends.py tests/protocol/test_wire_fuzz.py tests/tracefile/test_hostile.py
tests/gui/test_render_hostile.py tests/analysis/test_predicate_lang.py
tests/test_no_unsafe_decoding.py
tests/instrument/test_pmpi.py::test_killing_mpvis_run_leaves_no_rank_behind
tests/instrument/test_pmpi_faults.py tests/instrument/test_spill_values.py"
nice -n 10 sh -c 'while :; do :; done' &
HOG=$!
stream() {
    for i in $(seq 1 "$PASSES"); do
        QT_QPA_PLATFORM=offscreen nice -n 10 timeout 1500 .venv/bin/python -m pytest -q \
            -p no:cacheprovider $TESTS > "$LOGS/$1-$i.log" 2>&1
        echo "stream $1 pass $i: exit $? ($(tail -1 "$LOGS/$1-$i.log")); $(uptime | sed 's/.*load/load/')"
    done
}
PIDS=""
for s in $(seq 1 "$STREAMS"); do
    stream "$s" &
    PIDS="$PIDS $!"
done
wait $PIDS
kill "$HOG"
