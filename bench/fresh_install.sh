#!/bin/bash
# How long a fresh install takes (docs/BENCHMARKS.md), in a throwaway venv under /tmp:
#   bench/fresh_install.sh LABEL CHECKOUT [EXTRAS] [EXPORT]
# e.g. bench/fresh_install.sh after . "" 1 ; bench/fresh_install.sh before /tmp/main-base "" 0
# The steps of `make install`, with the checkout installed as a copy (not -e, so the checkout
# is left untouched) and, with EXPORT=1, the ONNX export into a cache of its own.
set -e
label=$1 source=$2 extras=${3:-} export_model=${4:-0}
venv=/tmp/ikario-install-$label
rm -rf "$venv" "$venv-cache"
t0=$(date +%s.%N)
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
t1=$(date +%s.%N)
"$venv/bin/pip" install --quiet torch==2.13.0
t2=$(date +%s.%N)
"$venv/bin/pip" install --quiet "$source$extras"
t3=$(date +%s.%N)
if [ "$export_model" = 1 ]; then
    (cd /tmp && HF_HUB_OFFLINE=1 IKARIO_MODEL_CACHE="$venv-cache" "$venv/bin/python" -m ikario_rag export-model)
fi
t4=$(date +%s.%N)
echo "$label: venv+pip $(echo "$t1-$t0" | bc) s, torch $(echo "$t2-$t1" | bc) s," \
    "project$extras $(echo "$t3-$t2" | bc) s, export $(echo "$t4-$t3" | bc) s," \
    "total $(echo "$t4-$t0" | bc) s, size $(du -sm "$venv" | cut -f1) MB," \
    "load $(cut -d' ' -f1 /proc/loadavg)"
