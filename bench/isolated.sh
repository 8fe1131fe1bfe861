#!/bin/bash
# Run a benchmark in a scheduling group of its own with a higher weight, so that other work
# on a shared machine disturbs it less: its own session (setsid) gives it its own autogroup,
# whose nice is lowered, and the command itself runs at nice -10. Needs the right to lower a
# nice value (root, or CAP_SYS_NICE); without it the command runs as it would have.
#   bench/isolated.sh .venv/bin/python bench/background_work.py 10 60
# Measurements taken this way say so in docs/BENCHMARKS.md: they compare runs made the same
# way (busy against idle, a change against main), never against runs made without it.
if [ -z "$IKARIO_ISOLATED" ]; then
    IKARIO_ISOLATED=1 exec setsid --wait "$0" "$@"
fi
echo -15 > /proc/self/autogroup 2>/dev/null || echo "isolated.sh: autogroup nice not lowered" >&2
exec nice -n -10 "$@"
