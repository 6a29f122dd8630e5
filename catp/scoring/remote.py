"""`VLLMScorer`: the LM scorer's self-information, computed by a vLLM server.

It asks `/v1/completions` for the prompt's own log-probs (`prompt_logprobs=0`,
`max_tokens=1`), sending token ids so the server scores exactly the tokens that
were mapped to units. Windows are planned as for the local scorer; their length
is capped by the server's `max_model_len` (from `/v1/models`). The tokenizer
(for offsets) is loaded locally, from `model` or else the served model's id,
and checked against the server's `/tokenize` once.

This module path imports no torch: only httpx and tokenizers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from catp.errors import BackendError, ModelError
from catp.scoring.logprobs import (COMMON_OPTIONS, QUESTION_TEMPLATE, SelfInformationScorer, Window,
                                   leading_special_token, needed_ranges, split_options)
from catp.scoring.manifest import verify_manifest
from catp.scoring.model_source import load_tokenizer, resolve_model

_PROBE = "Termination: either party may end this Agreement on 90 days' notice. 甲方应于2024年3月5日前付款。"


class VLLMScorer(SelfInformationScorer):
    """Self-information (or question relevance) of units, from a vLLM server."""

    name = "vllm"
    OPTIONS = ("url", "model", "sha256", "allow_download", "timeout", "api_key", *COMMON_OPTIONS)

    def __init__(self, url: str, *, model: str | None = None, sha256: str | None = None,
                 allow_download: bool | None = None, timeout: float = 300.0, api_key: str | None = None,
                 window: int = 4096, overlap: int | None = None, stride: int | None = None,
                 aggregate: str = "mean", max_tokens: int | None = None, batch_tokens: int | None = None,
                 question_template: str = QUESTION_TEMPLATE) -> None:
        super().__init__(window=window, overlap=overlap, stride=stride, aggregate=aggregate,
                         max_tokens=max_tokens, batch_tokens=batch_tokens or 32768,
                         question_template=question_template)
        if not url or not str(url).strip():
            raise ModelError("the vllm scorer needs the server's URL (--scorer-url)")
        root = str(url).strip().rstrip("/")
        if root.endswith("/v1"):
            root = root[: -len("/v1")]
        if not root.startswith(("http://", "https://")):
            raise ModelError(f"scorer URL {url!r} must start with http:// or https://")
        self.root = root
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=float(timeout), headers=headers)

        info = self._get("/v1/models")
        try:
            served = info["data"][0]
            self.served_model = str(served["id"])
            max_model_len = int(served.get("max_model_len") or 0)
        except (KeyError, IndexError, TypeError, ValueError):
            raise BackendError(f"{self.root}/v1/models: no served model in the answer") from None
        if max_model_len < 2:
            raise BackendError(f"{self.root}/v1/models does not give max_model_len for {self.served_model}")
        source = model or self.served_model
        folder = resolve_model(source, allow_download=allow_download, tokenizer_only=True)
        if sha256:
            verify_manifest(folder, sha256)
        self.tokenizer = load_tokenizer(folder)
        self._check_tokenizer(source)
        # Gemma: every prompt starts with <bos>, as the local scorer feeds it (ids are sent as they are)
        self.bos_id = leading_special_token(self.tokenizer)
        self._lead = [] if self.bos_id is None else [self.bos_id]
        self.max_len = max_model_len - 1 - len(self._lead)  # room for the BOS and the one generated token

    @classmethod
    def from_options(cls, **opts: Any) -> VLLMScorer:
        """Build from CLI/registry options; None means "default"."""
        own = split_options(opts, cls.OPTIONS, cls.name)
        if "url" not in own:
            raise ModelError("the vllm scorer needs the server's URL (--scorer-url)")
        return cls(own.pop("url"), **own)

    def close(self) -> None:
        self.client.close()

    def __getstate__(self) -> dict:
        """Pickled without its HTTP client (it holds locks and sockets); the copy opens its own."""
        state = self.__dict__.copy()
        client = state.pop("client")
        state["_client_options"] = (client.timeout, dict(client.headers))
        return state

    def __setstate__(self, state: dict) -> None:
        timeout, headers = state.pop("_client_options")
        self.__dict__.update(state)
        self.client = httpx.Client(timeout=timeout, headers=headers)

    # --- HTTP ------------------------------------------------------------------------
    def _get(self, path: str) -> dict:
        return self._call("GET", path, None)

    def _call(self, method: str, path: str, body: dict | None) -> dict:
        url = self.root + path
        try:
            resp = self.client.request(method, url, json=body)
        except httpx.TimeoutException:
            raise BackendError(f"vLLM server {url}: no answer within {self.client.timeout.read}s") from None
        except httpx.HTTPError as err:
            raise BackendError(f"cannot reach vLLM server {url}: {type(err).__name__}: {err}") from None
        if resp.status_code >= 400:
            raise BackendError(f"vLLM server {url} answered {resp.status_code}: {_error_message(resp)}")
        try:
            return resp.json()
        except ValueError:
            raise BackendError(f"vLLM server {url} answered {resp.status_code} with no JSON") from None

    def _check_tokenizer(self, source: str) -> None:
        """The local tokenizer must give the server's token ids, or offsets would lie."""
        local = list(self.tokenizer.encode(_PROBE, add_special_tokens=False).ids)
        try:
            resp = self.client.post(self.root + "/tokenize", json={
                "model": self.served_model, "prompt": _PROBE, "add_special_tokens": False})
        except httpx.HTTPError:
            return  # not every server has /tokenize; the prompt logprobs still use our ids
        if resp.status_code != 200:
            return
        try:
            served = [int(t) for t in resp.json()["tokens"]]
        except (ValueError, KeyError, TypeError):
            return
        if served != local:
            raise ModelError(
                f"tokenizer of {source} does not match the server's ({self.served_model}): "
                "give --scorer-model the served model's folder or id"
            )

    def _prompt_logprobs(self, prompts: list[list[int]]) -> list[list[float]]:
        """-log p of each prompt token (nan for the first), for a batch of token-id prompts."""
        body = {"model": self.served_model, "prompt": prompts, "max_tokens": 1, "temperature": 0.0,
                "prompt_logprobs": 0}
        data = self._call("POST", "/v1/completions", body)
        try:
            choices = sorted(data["choices"], key=lambda c: c["index"])
        except (KeyError, TypeError):
            raise BackendError(f"vLLM server {self.root}/v1/completions: no choices in the answer") from None
        if len(choices) != len(prompts):
            raise BackendError(f"vLLM server {self.root}: {len(choices)} answers for {len(prompts)} prompts")
        out = []
        for prompt, choice in zip(prompts, choices):
            plp = choice.get("prompt_logprobs")
            if not isinstance(plp, list) or len(plp) != len(prompt):
                raise BackendError(f"vLLM server {self.root}: prompt_logprobs missing or of the wrong length "
                                   "(does the server support prompt_logprobs?)")
            vals = [math.nan]
            for tok, entry in zip(prompt[1:], plp[1:]):
                try:
                    vals.append(-float(entry[str(tok)]["logprob"]))
                except (KeyError, TypeError, ValueError):
                    raise BackendError(f"vLLM server {self.root}: no log-prob for prompt token {tok}") from None
            out.append(vals)
        return out

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Group indices so each request carries about `batch_tokens` tokens."""
        out: list[list[int]] = []
        cur: list[int] = []
        size = 0
        for i, n in enumerate(lengths):
            if cur and size + n > self.batch_tokens:
                out.append(cur)
                cur, size = [], 0
            cur.append(i)
            size += n
        if cur:
            out.append(cur)
        return out

    # --- backend hooks -------------------------------------------------------------
    def _nll_windows(self, ids, windows: Sequence[Window], needed) -> list[float]:
        ids = list(ids)
        out = [math.nan] * len(ids)
        starts = [a for a, _ in needed]
        lead = len(self._lead)
        for group in self._batches([w.end - w.start for w in windows]):
            prompts = [self._lead + ids[windows[i].start:windows[i].end] for i in group]
            for i, vals in zip(group, self._prompt_logprobs(prompts)):
                w = windows[i]
                for a, b in needed_ranges(needed, starts, w.score_from, w.end):
                    out[a:b] = vals[a - w.start + lead:b - w.start + lead]
        return out

    def _nll_sequences(self, seqs, measure_from) -> list[float]:
        means = [0.0] * len(seqs)
        lead = len(self._lead)
        for group in self._batches([len(s) + lead for s in seqs]):
            for i, vals in zip(group, self._prompt_logprobs([self._lead + list(seqs[i]) for i in group])):
                part = vals[measure_from[i] + lead:]
                means[i] = math.fsum(part) / len(part) if part else 0.0
        return means


def _error_message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
        msg = data.get("error", data)
        msg = msg.get("message", msg) if isinstance(msg, dict) else msg
        text = str(msg)
    except ValueError:
        text = resp.text
    text = text.strip() or resp.reason_phrase
    return text.splitlines()[0][:300]
