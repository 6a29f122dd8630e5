#!/bin/bash
# Wait up to $1 seconds (or until the driver says "all done"), then pack the reports and cached outputs into $OUT.
end=$((SECONDS+$1))
while [ $SECONDS -lt $end ] && ! grep -q "all done" /root/progress.log 2>/dev/null; do sleep 10; done
tail -n 4 /root/progress.log; echo "done: $(grep -c ' rc=0' /root/progress.log) failed: $(grep ' rc=' /root/progress.log | grep -vc ' rc=0')"
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; uptime
cp /root/progress.log $OUT/ 2>/dev/null
(cd /root && tar -cJf $OUT/per-doc.tar.xz per-doc lcache 2>/dev/null); ls -la $OUT
