#!/bin/bash
# Issue 24 point 5 on the CPU: LLMLingua / LongLLMLingua with Gemma 3 270M over the first 20 documents of
# each dev set (e3c_en: all 8, done in session 15), then LongLLMLingua on the first 3 answerable questions of the first 8 of
# those documents (q3/). Subsets fixed before any result. Each run's report lands in its own folder.
cd /work/main
export CATP_LINGUA_MODEL=$HOME/.cache/catp/gguf/a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
R=/work/notes/lingua-runs; D=../shared/evals-data
run() { out=$R/$1; shift; [ -f $out/results.json ] && return; echo "$(date +%T) start $out" >> $R/progress.log
  nice -n 19 .venv/bin/python -m evals "$@" --ratios 1/6 --no-values --jobs 1 --out $out > $out.log 2>&1
  echo "$(date +%T) end $out rc=$?" >> $R/progress.log; }
run plain-ccks --data $D/ccks2017_cner.dev.jsonl --baselines head,llmlingua
run plain-tatqa --data $D/tatqa.dev.jsonl --limit 20 --baselines head,llmlingua
run q3-tatqa --data $R/q3/tatqa.dev.jsonl --question-aware --baselines head,longllmlingua
run q3-cuad --data $R/q3/cuad.dev.jsonl --question-aware --baselines head,longllmlingua
run plain-cail --data $D/cail2019_cjrc.dev.jsonl --limit 20 --baselines head,llmlingua
run plain-cuad --data $D/cuad.dev.jsonl --limit 20 --baselines head,llmlingua
run q3-cail --data $R/q3/cail2019_cjrc.dev.jsonl --question-aware --baselines head,longllmlingua
