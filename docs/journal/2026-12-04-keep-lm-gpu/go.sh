# all runs in parallel on the one GPU; outputs to $OUT (7 files at most)
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false
ln -sf /root/store/w8.safetensors .keeplm_dev/w8.safetensors
K=/tmp/kr; mkdir -p $K
MAXS=${MAXS:-300}
T0=$(date +%s)
python3 train/keep_lm.py --out $K/eval_all.json --time128k --save $K/keep_lm_all.safetensors --max-train-s $MAXS > $K/all.log 2>&1 &
for c in ${RUNS:-cail2019 ccks e3c kleister_nda_djvu lee2014_8k mtsamples_txt}; do
  python3 train/keep_lm.py --out $K/eval_no_$c.json --exclude $c --max-train-s $MAXS > $K/no_$c.log 2>&1 &
done
wait
echo "all runs done in $(( $(date +%s) - T0 ))s"
grep -h -E "HELDOUT|TIMING|epoch|Error|error|stopped" $K/*.log
cp $K/eval_all.json $K/keep_lm_all.safetensors $K/eval_no_cail2019.json $K/eval_no_ccks.json $K/eval_no_e3c.json $OUT/ 2>/dev/null
grep -h SUMMARY $K/*.log > $OUT/summaries.txt
tar -czf $OUT/rest.tar.gz -C $K .
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader
