"""Build a tiny random-weight Qwen2 model and a BPE tokenizer, offline.

Model hubs are unreachable here, so tests (and the vLLM test server) use this
instead of Qwen1.5-0.5B. head_dim is 64 so that the vLLM CPU build accepts it.
Usage: python tests/tiny_qwen.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

TRAINING_TEXT = [
    "The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.",
    "This Agreement shall be governed by the laws of the State of New York.",
    "Either party may terminate this Agreement upon ninety (90) days written notice.",
    "However, the Company shall not be liable for any indirect damages unless otherwise agreed.",
    "Revenue increased 12% year over year to USD 3.4 billion in Q3 2024.",
    "The patient denies chest pain. No evidence of fever. Aspirin 100 mg daily.",
    "甲方应于2024年3月5日前向乙方支付违约金三百万元。",
    "但是，如果乙方未按期交付，甲方有权解除本合同。",
    "根据相关规定，经双方协商一致，签订本协议。",
    "本公司2024年营业收入同比增长百分之五，净利润为1.2亿元。",
    "患者否认高血压病史，未见明显异常，阿莫西林0.5g 每日3次。",
    "What is the governing law? 本合同适用中华人民共和国法律。",
]


def build_tokenizer(vocab_size: int = 1024):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    # Qwen2's own normalizer and pre-tokenizer: transformers (and so vLLM) loads a qwen2
    # model's tokenizer as Qwen2Tokenizer, which applies them; tokenizer.json must agree
    # so that counting with it locally gives the server's counts.
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(TRAINING_TEXT * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build(out_dir: str | Path, *, layers: int = 2, max_len: int = 2048, seed: int = 0) -> Path:
    """Write config, safetensors weights and tokenizer files to `out_dir`; return it."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=layers,
        num_attention_heads=2,  # head_dim = 128 / 2 = 64
        num_key_value_heads=1,
        max_position_embeddings=max_len,
        tie_word_embeddings=False,
        torch_dtype="float32",
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
    )
    model = Qwen2ForCausalLM(config)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    gen = {"eos_token_id": config.eos_token_id, "do_sample": False}
    (out / "generation_config.json").write_text(json.dumps(gen))
    return out


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tiny-qwen"))
