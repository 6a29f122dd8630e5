#!/bin/bash
# Every device call: stash carried model parts outside the repo ($R/store), assemble a model once all
# its parts are there (sha256 checked), install gguf, set up the eval's packages, data and code.
G=.gpu; R=${DEVROOT:-/root}; T=${DEVTMP:-/tmp}; STORE=$R/store
mkdir -p $STORE/parts $T/gpusite $R/tok $R/data $R/rec $R/tab $R/ev
echo "call start $(date +%T); stored: $(ls $STORE | tr '\n' ' ') parts: $(ls $STORE/parts | tr '\n' ' ')"
for d in $G/c*; do [ -d "$d" ] || continue; for f in "$d"/*; do [ -f "$f" ] && mv "$f" $STORE/parts/ && echo "stored $(basename $f)"; done; done
[ -f $T/gpusite/.ok ] || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $T/gpusite $G/bin/*.whl 2>&1 | grep -v WARNING; touch $T/gpusite/.ok; }
PYTHONPATH=$T/gpusite python3 $G/bin/assemble.py $STORE
for x in $G/x*/*.tar.xz; do [ -f "$x" ] || continue; n=$(basename $x); [ -f $R/.$n ] && continue
  case $n in site*|zh*) mkdir -p $T/evsite; tar -xJf $x -C $T/evsite;; *) tar -xJf $x -C $R/data;; esac; touch $R/.$n; echo "unpacked $n"; done
for x in $G/x*/*-tok.json.xz; do [ -f "$x" ] || continue; n=$(basename $x -tok.json.xz); mkdir -p $R/tok/$n; [ -f $R/tok/$n/tokenizer.json ] || xz -dc $x > $R/tok/$n/tokenizer.json; done
cp $G/bin/code/lm_table.py evals/lm_table.py; cp $G/bin/code/lm.py catp/scoring/lm.py
echo "setup done $(date +%T); $(nvidia-smi --query-gpu=name,memory.used --format=csv,noheader 2>&1 | head -1)"
