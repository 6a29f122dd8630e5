"""Record (CPU workers), compute (GPU) and replay (CPU workers) the eval groups, as far as time allows.

python3 run.py MODEL QAWARE(0|1) RATIOS STOP_COMPUTE_S STOP_ALL_S GROUP... ; a GROUP is name=data=record_jobs.
Runs already done on this machine (/root/ev/<run>/results.json) are skipped. Each finished run's
figures are appended to $OUT/summary.txt."""
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

t0 = time.time()
model, qaware, ratios = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
stop_compute, stop_all = float(sys.argv[4]), float(sys.argv[5])
groups = [g.split("=") for g in sys.argv[6:]]
OUT = Path(os.environ["OUT"])
ROOT = Path(os.environ.get("DEVROOT", "/root"))
STORE = ROOT / "store"
manifest = json.loads((Path(__file__).parent / "manifest.json").read_text())[model]
EV, REC, TAB = ROOT / "ev", ROOT / "rec", ROOT / "tab"
evsite = os.environ.get("EVSITE", "/tmp/evsite:/tmp/gpusite")


def log(msg):
    print(f"[{time.time() - t0:6.1f}s] {msg}", flush=True)


def eval_cmd(run, data, scorer, jobs, table, extra_env=None, ratios="1/6"):
    env = dict(os.environ, PYTHONPATH=evsite, CATP_LM_TOKENIZER=str(ROOT / "tok" / model), CATP_LM_TABLE=table,
               PYTHONUNBUFFERED="1", **(extra_env or {}))
    args = ["python3", "-m", "evals.lm_table", "eval", "--data", data, "--ratios", ratios, "--no-values",
            "--baselines", "", "--scorer", scorer, "--out", str(EV / run), "--jobs", str(jobs)]
    if qaware:
        args.append("--question-aware")
    return subprocess.Popen(args, env=env, stdout=open(EV / f"{run}.log", "w"), stderr=subprocess.STDOUT)


def summarize(run):
    p = EV / run / "results.json"
    if not p.exists():
        log(f"{run}: NO RESULTS (see {run}.log)")
        os.system(f"tail -5 {EV}/{run}.log")
        return
    d = json.loads(p.read_text())
    for name, s in d["sets"].items():
        for b, m in s["methods"]["catp"].items():
            line = (f"{run} | {name} | docs {s['docs']} | {b} | kept {m['kept']['all']:.4f} | "
                    f"questions {m.get('questions')} n {m.get('questions_n')} | q-aware {m.get('questions_aware')} | "
                    f"size {m['size_tokens']:.4f} | over {m['over_budget_docs']} | wall {d['wall_s']:.0f}s")
            log(line)
            with open(OUT / "summary.txt", "a") as f:
                f.write(line + "\n")


def wait_all(procs):
    for run, p in procs:
        left = stop_all - (time.time() - t0)
        try:
            p.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            p.kill()
            log(f"{run}: killed at the time limit")
        summarize(run)


# 1. record every group not yet recorded (CPU, in parallel); each is waited for just before its compute
recording = {}
for name, data, jobs in groups:
    if not (EV / f"rec-{name}" / "results.json").exists():
        recording[name] = eval_cmd(f"rec-{name}", data, "lm-record", jobs, str(REC / f"{name}.npz"))
log(f"recording {len(recording)} groups")

# 2. compute each group's table (GPU), replaying each as soon as it is there (CPU)
sys.path.insert(0, os.getcwd())
if manifest.get("bos") is not None:
    os.environ["CATP_LM_BOS"] = str(manifest["bos"])
from evals.lm_table import compute  # noqa: E402

replays = []
for name, data, jobs in groups:
    table = TAB / f"{name}.table.npz"
    if name in recording:
        wait_all([(f"rec-{name}", recording[name])])
    if not (EV / f"rec-{name}" / "results.json").exists():
        log(f"{name}: not recorded")
        continue
    if not table.exists():
        files = sorted(glob.glob(str(REC / f"{name}.*.npz")))
        if not files or time.time() - t0 > stop_compute:
            log(f"{name}: not computed ({len(files)} request files)")
            continue
        compute([Path(f) for f in files], str(STORE / manifest["file"]), TAB)
        log(f"{name}: table {table.stat().st_size} bytes")
    runs = [(f"lm-{name}", {})] + ([(f"mix-{name}", {"CATP_LM_BLEND": "0.5"})] if qaware else [])
    for run, env in runs:
        if not (EV / run / "results.json").exists():
            replays.append((run, eval_cmd(run, data, "lm-table", 8, str(table), env, ratios)))
wait_all(replays)
log("end")
