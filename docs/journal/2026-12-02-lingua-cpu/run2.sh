#!/bin/bash
# Issue 24 point 5 on the CPU, one document per evals run so that progress survives a session's end
# (a run whose results.json exists is skipped). Same subsets as run.sh (fixed before any result), plus all 8
# e3c_en documents and tatqa's first 8 again (their published figures used the word-only alignment).
cd /work/main
export CATP_LINGUA_MODEL=$HOME/.cache/catp/gguf/a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
R=/work/notes/lingua-runs; P=$R/per-doc; mkdir -p $P
export CATP_LINGUA_CACHE=$R/cache  # compressed outputs: a rerun costs no model time
one() { f=$1; shift; name=$(basename $f .jsonl); out=$P/$name; [ -f $out/results.json ] && return
  echo "$(date +%T) start $name" >> $R/progress2.log
  nice -n 19 .venv/bin/python -m evals --data $f --ratios 1/6 --no-values --jobs 1 --out $out "$@" > $out.log 2>&1
  echo "$(date +%T) end $name rc=$?" >> $R/progress2.log; }
plain() { for f in "$@"; do one $f --baselines head,llmlingua; done; }
aware() { for f in "$@"; do one $f --question-aware --baselines head,longllmlingua; done; }
plain $R/docs/ccks2017_cner.dev.*.jsonl
plain $R/docs/tatqa.dev.*.jsonl
plain $R/docs/e3c_en.dev.*.jsonl
aware $R/docs/q3.tatqa.dev.*.jsonl
plain $R/docs/cail2019_cjrc.dev.*.jsonl
aware $R/docs/q3.cail2019_cjrc.dev.*.jsonl
plain $R/docs/cuad.dev.*.jsonl
aware $R/docs/q3.cuad.dev.*.jsonl
