#!/bin/bash
# Every device call: stash carried files outside the repo (/root/store), assemble the GGUF once all its
# parts are there (sha256 checked), install the wheels and unpack the packages and documents once.
G=.gpu; R=/root; STORE=$R/store
mkdir -p $STORE/parts /tmp/gpusite /tmp/evsite $R/data
echo "call start $(date +%T); stored: $(ls $STORE | tr '\n' ' ') parts: $(ls $STORE/parts | tr '\n' ' ')"
for d in $G/c*; do [ -d "$d" ] || continue; for f in "$d"/*; do [ -f "$f" ] || continue
  case $f in *.p[0-9]) mv "$f" $STORE/parts/;; *) mv "$f" $STORE/;; esac; echo "stored $(basename $f)"; done; done
if [ ! -f /tmp/gpusite/.ok ] && ls $STORE/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpusite $STORE/*.whl 2>&1 | grep -v WARNING; touch /tmp/gpusite/.ok; fi
for n in site zh; do [ -f $STORE/$n.tar.xz ] && [ ! -f /tmp/evsite/.$n ] && tar -xJf $STORE/$n.tar.xz -C /tmp/evsite && touch /tmp/evsite/.$n && echo "unpacked $n"; done
[ -f $STORE/data.tar.xz ] && [ ! -f $R/data/.ok ] && tar -xJf $STORE/data.tar.xz -C $R/data && touch $R/data/.ok && echo "unpacked data ($(ls $R/data | wc -l) files)"
python3 $G/bin/assemble.py $STORE
export PYTHONPATH=/tmp/evsite:/tmp/gpusite:$PWD PYTHONUNBUFFERED=1
echo "setup done $(date +%T); $(nvidia-smi --query-gpu=name,memory.used --format=csv,noheader 2>&1 | head -1)"
