"""Backend pieces that need no server: message order, templates, metrics parsing, KV shares, URLs."""

from __future__ import annotations

import pytest

from catp.backends.client import parse_cache_config, split_server_url
from catp.backends.messages import normalize_messages
from catp.backends.schemas import KvCache
from catp.backends.templates import DEFAULTS, PromptTemplate, load_templates
from catp.errors import CatpError, InputError


def test_system_messages_move_to_the_front_in_order_and_join():
    msgs = [{"role": "user", "content": "q1"}, {"role": "system", "content": "A"},
            {"role": "assistant", "content": "a1"}, {"role": "system", "content": "B"},
            {"role": "user", "content": "q2"}]
    out, warnings = normalize_messages(msgs)
    assert out == [{"role": "system", "content": "A\n\nB"}, {"role": "user", "content": "q1"},
                   {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]
    assert warnings == ["moved system message(s) at position 1, 3 to the front", "joined 2 system messages into one"]
    assert msgs[1] == {"role": "system", "content": "A"}  # the input is not changed


def test_well_formed_messages_pass_without_warnings():
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"}]
    assert normalize_messages(msgs) == (msgs, [])


@pytest.mark.parametrize("bad", [[], [{"role": "robot", "content": "x"}], [{"content": "x"}],
                                 [{"role": "user", "content": 3}]])
def test_malformed_messages_are_input_errors(bad):
    with pytest.raises(InputError):
        normalize_messages(bad)


def test_template_fills_slots_once_so_braces_in_documents_are_safe():
    tmpl = PromptTemplate(system="Gaps look like {gap}.", user="D: {document}\nQ: {question}")
    msgs = tmpl.render("text with {question} and {gap} in it", "why {document}?", gap="…")
    assert msgs == [{"role": "system", "content": "Gaps look like …."},
                    {"role": "user", "content": "D: text with {question} and {gap} in it\nQ: why {document}?"}]


def test_default_templates_are_per_language():
    zh = DEFAULTS["zh"].render("合同", "问题？", gap="…")
    en = DEFAULTS["en"].render("contract", "question?", gap="…")
    assert "问题：问题？" in zh[-1]["content"] and "Question: question?" in en[-1]["content"]
    assert zh[0]["role"] == en[0]["role"] == "system"


def test_template_file_single_or_per_language(tmp_path):
    one = tmp_path / "one.yaml"
    one.write_text("user: 'Read {document} then answer {question}'\n", encoding="utf-8")
    both = load_templates(one)
    assert both["en"] is both["zh"] and both["en"].system is None
    per = tmp_path / "per.json"
    per.write_text('{"zh": {"system": "只用中文", "user": "{document}\\n{question}"}}', encoding="utf-8")
    loaded = load_templates(per)
    assert loaded["zh"].system == "只用中文" and loaded["en"] == DEFAULTS["en"]


@pytest.mark.parametrize("text, message", [
    ("user: 'no slots here'", "must contain {document} and {question}"),
    ("fr: {user: '{document}{question}'}", "unknown section(s) fr"),
    ("- a list", "must be a mapping"),
    ("user: [unclosed", "cannot read the template file"),
])
def test_bad_template_files_say_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="t.yaml") as info:
        load_templates(path)
    assert message in str(info.value)


METRICS = """# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",kv_cache_size_tokens="1000",num_gpu_blocks="100",prefix_caching_hash_algo="sha256"} 1.0
vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="80"} 1.0
vllm:num_requests_running{engine="0"} 0.0
"""


def test_cache_config_is_read_from_metrics_smallest_engine_wins():
    kv = parse_cache_config(METRICS, source="m")
    assert (kv.num_blocks, kv.block_size, kv.tokens) == (100, 16, 992)  # 1000 tokens reported < 80 x 16
    assert parse_cache_config("vllm:num_requests_running 0\n", source="m") is None


def test_kv_share_uses_whole_blocks_and_the_engines_own_figure():
    kv = KvCache(num_blocks=100, block_size=16, reported_tokens=1000, source="m")
    assert kv.usable_blocks == 62  # 1000 // 16: the group-aware figure is smaller than 100 blocks
    assert kv.per_request_tokens(1) == 992
    assert kv.per_request_tokens(4) == 15 * 16
    assert kv.per_request_tokens(1000) == 0


@pytest.mark.parametrize("given, root", [("http://h:8000/v1", "http://h:8000"), ("http://h:8000/", "http://h:8000"),
                                         ("https://h/api/v1/", "https://h/api")])
def test_server_url_with_or_without_v1(given, root):
    assert split_server_url(given) == (root, root + "/v1")


def test_server_url_without_scheme_is_a_usage_error():
    with pytest.raises(CatpError) as info:
        split_server_url("localhost:8000")
    assert info.value.exit_code == 2
