"""Issue 24 point 5 on the device: convert the GGUF once, then run one `python -m evals` per document
file (plain: head,llmlingua; q3: --question-aware head,longllmlingua) on WORKERS processes sharing the GPU.
A document whose results.json exists is skipped. python3 driver.py WORKERS"""
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

R = Path(os.environ.get("DEVROOT", "/root"))
DATA, PER, CACHE, LOG = R / "data", R / "per-doc", R / "lcache", R / "progress.log"
GGUF = R / "store" / "gemma-3-270m-q4_k_m.gguf"
t0 = time.time()


def log(msg):
    with open(LOG, "a") as f:
        f.write(f"{time.strftime('%H:%M:%S')} [{time.time() - t0:6.0f}s] {msg}\n")


from catp.scoring.gguf import gguf_folder  # noqa: E402

folder = gguf_folder(GGUF)
log(f"converted: {folder}")
tok = R / "store" / "gemma-tok.json.xz"
if tok.exists():
    local = subprocess.run(["xz", "-dc", str(tok)], capture_output=True).stdout
    same = (folder / "tokenizer.json").read_bytes() == local
    log(f"tokenizer.json same as the CPU runs': {same}")
    if not same:
        (folder / "tokenizer.json").write_bytes(local)
        log("tokenizer.json replaced by the CPU runs' conversion")
env = dict(os.environ, CATP_LINGUA_MODEL=str(folder), CATP_LINGUA_DEVICE=os.environ.get("CATP_LINGUA_DEVICE", "cuda"), CATP_LINGUA_CACHE=str(CACHE),
           OMP_NUM_THREADS="2", TOKENIZERS_PARALLELISM="false")
jobs = []
for prefix in ["ccks2017_cner", "e3c_en", "tatqa", "cail2019_cjrc", "cuad"]:
    jobs += [(f, ["--baselines", "head,llmlingua"]) for f in sorted(DATA.glob(f"{prefix}.dev.*.jsonl"))]
for prefix in ["tatqa", "cail2019_cjrc", "cuad"]:
    jobs += [(f, ["--question-aware", "--baselines", "head,longllmlingua"])
             for f in sorted(DATA.glob(f"q3.{prefix}.dev.*.jsonl"))]
skip = {f"ccks2017_cner.dev.{i:02d}" for i in range(1, 11)}  # done on the CPU (session 16)
PER.mkdir(exist_ok=True)


def one(job):
    f, extra = job
    name = f.name[: -len(".jsonl")]
    out = PER / name
    if name in skip or (out / "results.json").exists():
        return
    started = time.time()
    rc = subprocess.call([sys.executable, "-m", "evals", "--data", str(f), "--ratios", "1/6", "--no-values",
                          "--jobs", "1", "--out", str(out), *extra], env=env,
                         stdout=open(PER / f"{name}.log", "w"), stderr=subprocess.STDOUT)
    log(f"end {name} rc={rc} {time.time() - started:.0f}s")


log(f"{len(jobs)} jobs, {sys.argv[1]} workers")
with ThreadPoolExecutor(int(sys.argv[1])) as pool:
    list(pool.map(one, jobs))
log("all done")
