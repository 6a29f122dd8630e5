"""Session fixtures: the tiny Qwen2 model, and a real vLLM CPU server serving it.

`tiny_model_dir`  the model folder (built once per session by tests/tiny_qwen.py).
`vllm_server`     a running vLLM OpenAI-compatible server: a `str` holding its base URL
                  ("http://127.0.0.1:PORT/v1") with `.root`, `.model`, `.model_dir`,
                  `.max_model_len`, `.log_path`, `.process` and `.startup_s` attached.
`vllm_server_factory`  start() -> another such server, for a test that breaks it (stopped
                  at teardown). Costs a startup (~30 s); use the session server when you can.

The server runs from its own venv: env CATP_VLLM_PYTHON (default /opt/catp-vllm/bin/python;
.ci/setup-vllm.sh builds it). Tests marked `vllm` fail with a clear message when that
Python is missing, or skip when CATP_SKIP_VLLM=1. CATP_VLLM_START_TIMEOUT bounds startup
(seconds, default 240).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

TESTS = Path(__file__).resolve().parent
VLLM_PYTHON = os.environ.get("CATP_VLLM_PYTHON", "/opt/catp-vllm/bin/python")
SKIP_VLLM = os.environ.get("CATP_SKIP_VLLM") == "1"
START_TIMEOUT = float(os.environ.get("CATP_VLLM_START_TIMEOUT", "240"))
TINY_MAX_LEN = 2048


def vllm_missing_reason() -> str | None:
    if not (os.path.isfile(VLLM_PYTHON) and os.access(VLLM_PYTHON, os.X_OK)):
        return (f"the vLLM venv's Python {VLLM_PYTHON} does not exist: run .ci/setup-vllm.sh, "
                "set CATP_VLLM_PYTHON, or set CATP_SKIP_VLLM=1 to skip the vllm tests")
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("vllm") is None:
        return
    if SKIP_VLLM:
        pytest.skip("CATP_SKIP_VLLM=1")
    reason = vllm_missing_reason()
    if reason:
        pytest.fail(reason, pytrace=False)


def _tiny_qwen():
    spec = importlib.util.spec_from_file_location("tiny_qwen", TESTS / "tiny_qwen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_tiny_model(out_dir: Path, **kwargs) -> Path:
    """tests/tiny_qwen.build: e.g. max_len=32768 for a model that can stream for long."""
    return _tiny_qwen().build(out_dir, **kwargs)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight Qwen2ForCausalLM + BPE tokenizer + chat template, max_len 2048."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen") / "model", max_len=TINY_MAX_LEN)


class VllmServer(str):
    """The base URL of a running server, with what tests need to know about it attached."""

    root: str
    model: str
    model_dir: Path
    max_model_len: int
    log_path: Path
    process: subprocess.Popen
    startup_s: float

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_vllm_server(model_dir: Path, log_path: Path, *, max_model_len: int = TINY_MAX_LEN,
                      timeout: float = START_TIMEOUT, extra_args: tuple[str, ...] = ()) -> VllmServer:
    """Start `vllm.entrypoints.openai.api_server` in its own process group; wait until it answers."""
    reason = vllm_missing_reason()
    if reason:
        raise RuntimeError(reason)
    port = free_port()
    env = {**os.environ, "VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPATH", None)  # the server venv must not see the dev venv's packages
    cmd = [VLLM_PYTHON, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--host", "127.0.0.1", "--port", str(port), "--max-model-len", str(max_model_len),
           "--enforce-eager", "--seed", "0", "--dtype", "float32", *extra_args]
    log = open(log_path, "wb")
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(log_path.parent),
                            start_new_session=True)
    log.close()
    server = VllmServer(f"http://127.0.0.1:{port}/v1")
    server.root, server.model, server.model_dir = f"http://127.0.0.1:{port}", str(model_dir), Path(model_dir)
    server.max_model_len, server.log_path, server.process = max_model_len, log_path, proc
    deadline = started + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM server exited with code {proc.returncode} while starting; "
                               f"log {log_path}:\n{server.log_tail()}")
        try:
            if httpx.get(server + "/models", timeout=2.0).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop_vllm_server(server)
            raise RuntimeError(f"vLLM server not ready after {timeout:.0f}s; log {log_path}:\n{server.log_tail()}")
        time.sleep(0.5)
    server.startup_s = time.monotonic() - started
    return server


def stop_vllm_server(server: VllmServer, grace: float = 20.0) -> None:
    """SIGTERM the server's process group (API server + engine core), SIGKILL it if it lingers."""
    proc = server.process
    for sig, wait in ((signal.SIGCONT, 0), (signal.SIGTERM, grace), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)  # the group we created with start_new_session
        except ProcessLookupError:
            return
        if wait:
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            # the leader is gone; make sure no child of its group survives it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return


@pytest.fixture(scope="session")
def sliding_model_dir(tiny_model_dir: Path, tmp_path_factory) -> Path:
    """The tiny model with sliding-window attention (32 tokens) in both layers.

    Its receptive field is 2 * (32 - 1) = 62 tokens, so any window that gives a token at
    least 62 tokens of left context computes exactly what one full pass computes."""
    import json
    import shutil

    out = tmp_path_factory.mktemp("sliding")
    for f in tiny_model_dir.iterdir():
        shutil.copy(f, out / f.name)
    cfg = json.loads((out / "config.json").read_text())
    cfg.update(layer_types=["sliding_attention"] * cfg["num_hidden_layers"], sliding_window=32,
               use_sliding_window=True, max_window_layers=0)
    (out / "config.json").write_text(json.dumps(cfg))
    return out


@pytest.fixture(scope="session")
def vllm_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """One real vLLM CPU server for the whole session, serving the tiny model."""
    if SKIP_VLLM:
        pytest.skip("CATP_SKIP_VLLM=1")
    reason = vllm_missing_reason()
    if reason:
        pytest.fail(reason, pytrace=False)
    log_path = tmp_path_factory.mktemp("vllm") / "server.log"
    try:
        server = start_vllm_server(tiny_model_dir, log_path)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    print(f"\n[vllm_server] {server} ready in {server.startup_s:.1f}s (log {log_path})")
    try:
        yield server
    finally:
        stop_vllm_server(server)


@pytest.fixture
def vllm_server_factory(tiny_model_dir: Path, tmp_path: Path):
    """Start private servers (e.g. to kill them); all are stopped at teardown."""
    if SKIP_VLLM:
        pytest.skip("CATP_SKIP_VLLM=1")
    started: list[VllmServer] = []

    def start(model_dir: Path | None = None, **kwargs) -> VllmServer:
        try:
            server = start_vllm_server(model_dir or tiny_model_dir, tmp_path / f"server{len(started)}.log", **kwargs)
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            stop_vllm_server(server)
