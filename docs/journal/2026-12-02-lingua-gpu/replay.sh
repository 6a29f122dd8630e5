#!/bin/bash
# Score every document again from LLMLingua's cached outputs (no model time; CATP_LINGUA_DEVICE=cuda makes a
# cache miss fail at once on a machine without a GPU instead of recomputing on the CPU). 2 at a time.
# bash replay.sh DOCS_DIR OUT_DIR
cd "$(dirname "$0")/../../.."
export CATP_LINGUA_MODEL=$HOME/.cache/catp/gguf/a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
export CATP_LINGUA_CACHE=${CATP_LINGUA_CACHE:-/work/notes/lingua-runs/cache} CATP_LINGUA_DEVICE=cuda
D=$1; P=$2; mkdir -p $P
one() { f=$1; name=$(basename $f .jsonl); [ -f $P/$name/results.json ] && return
  case $name in q3.*) extra="--question-aware --baselines head,longllmlingua";; *) extra="--baselines head,llmlingua";; esac
  .venv/bin/python -m evals --data $f --ratios 1/6 --no-values --jobs 1 --out $P/$name $extra > $P/$name.log 2>&1
  echo "$(date +%T) $name rc=$?"; }
export -f one; export P
ls $D/*.jsonl | xargs -P 2 -I{} bash -c 'one {}'
