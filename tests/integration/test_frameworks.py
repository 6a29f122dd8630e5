"""catp inside LangChain, LlamaIndex and Haystack, with the real frameworks (no stand-ins for them).

Each test builds a retriever over the example documents (split into chunks), asks a question whose answer sits
deep in the longest one (Section 20.2 of examples/contract_en.txt, at 89% of its 73K characters), and checks
that the answer survives the compression, that the offsets in the `catp` metadata give back the extract, and
that ids, scores and metadata are kept. The vllm test reads the budget from the real vLLM CPU server and sends
the pruned documents through LangChain's ChatOpenAI to it.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
QUESTION = "Where is the seat of the arbitration?"
ANSWER = "The seat of the arbitration shall be Singapore."
CONTRACT = (EXAMPLES / "contract_en.txt").read_text(encoding="utf-8")
ANSWER_AT = CONTRACT.index(ANSWER)
BUDGET = 400  # shared by the retrieved chunks: about a seventh of what the retriever returns


def example_texts() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.txt"))}


def covers(kept: list[dict], start: int, end: int) -> bool:
    return any(s["start"] <= start and end <= s["end"] for s in kept)


def token_count(text: str) -> int:
    from catp.tokens import load_token_counter

    return load_token_counter(None).count(text)


def test_import_catp_stays_light():
    code = ("import sys, catp, catp.integrations, catp.integrations.core; "
            "heavy = ('langchain', 'llama_index', 'haystack', 'torch', 'transformers', 'spacy'); "
            "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(heavy)}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_budget_is_required_and_checked():
    from catp.errors import BudgetError, RuleError
    from catp.integrations.core import DocumentsPruner

    with pytest.raises(BudgetError, match="give one of budget"):
        DocumentsPruner()
    with pytest.raises(BudgetError, match="not budget and ratio"):
        DocumentsPruner(budget=10, ratio="1/6")
    with pytest.raises(BudgetError, match="ratio"):
        DocumentsPruner(ratio="7/6")
    with pytest.raises(RuleError):
        DocumentsPruner(budget=10, rules=[ROOT / "no-such-rules.yaml"])


# -- LangChain ---------------------------------------------------------------------------------------------------

def langchain_chunks():
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=2000, chunk_overlap=0, add_start_index=True)
    docs = [Document(page_content=text, metadata={"source": name}) for name, text in example_texts().items()]
    chunks = splitter.split_documents(docs)
    for i, chunk in enumerate(chunks):
        chunk.id = f"chunk-{i}"
    return chunks


def keyword_retriever(chunks, k: int = 8):
    """A small retriever from langchain-core's BaseRetriever: the k chunks sharing the most query words."""
    from langchain_core.retrievers import BaseRetriever

    class KeywordRetriever(BaseRetriever):
        documents: list
        k: int

        def _get_relevant_documents(self, query, *, run_manager):
            words = set(re.findall(r"\w{4,}", query.lower()))
            scored = [(len(words & set(re.findall(r"\w{4,}", d.page_content.lower()))), i)
                      for i, d in enumerate(self.documents)]
            return [self.documents[i] for _, i in sorted(scored, key=lambda p: (-p[0], p[1]))[:self.k]]

    return KeywordRetriever(documents=chunks, k=k)


def check_langchain_output(retrieved, compressed, budget: int) -> None:
    by_id = {d.id: d for d in retrieved}
    assert [d.id for d in compressed] == [d.id for d in retrieved if d.id in {c.id for c in compressed}]
    answered = []
    for doc in compressed:
        original = by_id[doc.id]
        meta = doc.metadata["catp"]
        assert {k: v for k, v in doc.metadata.items() if k != "catp"} == original.metadata
        gap = " … "
        assert doc.page_content == gap.join(original.page_content[s["start"]:s["end"]] for s in meta["kept"])
        assert meta["output_tokens"] == token_count(doc.page_content)
        assert meta["input_tokens"] == token_count(original.page_content)
        assert meta["budget"] == budget and meta["shared_budget"] is True
        for d in meta["dropped_protected"]:
            assert original.page_content[d["start"]:d["end"]] == d["text"]
        base = original.metadata["start_index"]
        if original.metadata["source"] == "contract_en.txt" and base <= ANSWER_AT < base + len(original.page_content):
            answered.append(covers(meta["kept"], ANSWER_AT - base, ANSWER_AT - base + len(ANSWER)))
    assert answered == [True]
    assert sum(d.metadata["catp"]["output_tokens"] for d in compressed) <= budget
    assert sum(token_count(d.page_content) for d in retrieved) > 5 * budget  # the budget did cut


def test_langchain_compressor_in_contextual_compression_retriever():
    from langchain_classic.retrievers import ContextualCompressionRetriever

    from catp.integrations.langchain import CatpCompressor

    chunks = langchain_chunks()
    base = keyword_retriever(chunks)
    retriever = ContextualCompressionRetriever(base_compressor=CatpCompressor(budget=BUDGET, shared=True),
                                               base_retriever=base)
    compressed = retriever.invoke(QUESTION)
    check_langchain_output(base.invoke(QUESTION), compressed, BUDGET)
    assert ANSWER in "\n".join(d.page_content for d in compressed)
    # the async path gives the same documents
    again = asyncio.run(retriever.ainvoke(QUESTION))
    assert [(d.id, d.page_content, d.metadata) for d in again] == [(d.id, d.page_content, d.metadata)
                                                                  for d in compressed]


def test_langchain_async_compression_leaves_the_event_loop_free():
    from catp.integrations.langchain import CatpCompressor

    chunks = langchain_chunks()[:40]
    compressor = CatpCompressor(ratio="1/4", shared=True, domain="legal")

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.create_task(ticker())
        docs = await compressor.acompress_documents(chunks, QUESTION)
        task.cancel()
        return docs, ticks

    docs, ticks = asyncio.run(main())
    assert ticks > 5  # the loop ran while catp pruned (in one thread it would not have ticked at all)
    assert docs and all(d.metadata["catp"]["domain"] == "legal" for d in docs)


def test_langchain_per_document_budget_and_user_rules(tmp_path):
    from catp.integrations.langchain import CatpCompressor

    rules = tmp_path / "seat.yaml"
    rules.write_text("name: seat\nversion: 1\nrules:\n  - id: user.seat\n    kind: phrases\n    category: fact\n"
                     "    priority: 90\n    action: protect\n    lang: [en]\n    phrases: [seat of the arbitration shall be]\n",
                     encoding="utf-8")
    chunks = [c for c in langchain_chunks() if c.metadata["source"] == "contract_en.txt"]
    compressor = CatpCompressor(budget=60, rules=[rules], domain="legal")
    out = compressor.compress_documents(chunks, "Who pays the costs?")  # the question does not ask for it
    assert len(out) == len(chunks)
    for doc in out:
        assert doc.metadata["catp"]["output_tokens"] <= 60 and doc.metadata["catp"]["shared_budget"] is False
    kept = [d for d in out if ANSWER in d.page_content]
    assert len(kept) == 1 and "user.seat" in str(kept[0].metadata["catp"]["kept"])
    plain = CatpCompressor(budget=60, domain="legal").compress_documents(chunks, "Who pays the costs?")
    assert not any(ANSWER in d.page_content for d in plain)  # the user's rule kept it


# -- LlamaIndex --------------------------------------------------------------------------------------------------

def test_llama_index_postprocessor_after_a_keyword_index():
    from llama_index.core import Document, SimpleKeywordTableIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import MetadataMode, NodeWithScore

    from catp.integrations.llama_index import CatpPostprocessor

    docs = [Document(text=text, metadata={"source": name}, doc_id=name) for name, text in example_texts().items()]
    nodes = SentenceSplitter(chunk_size=512, chunk_overlap=0).get_nodes_from_documents(docs)
    # the simple keyword table extracts keywords with a regex: the LLM it must be given is never called
    retriever = SimpleKeywordTableIndex(nodes, llm=MockLLM()).as_retriever(retriever_mode="simple",
                                                                          num_chunks_per_query=8)
    retrieved = retriever.retrieve(QUESTION)
    retrieved = [NodeWithScore(node=n.node, score=1.0 - i / 10) for i, n in enumerate(retrieved)]  # ranked
    out = CatpPostprocessor(ratio="1/6", shared=True).postprocess_nodes(retrieved, query_str=QUESTION)
    by_id = {n.node.node_id: n for n in retrieved}
    assert out and [n.node.node_id for n in out] == [n.node.node_id for n in retrieved if n.node.node_id in
                                                      {o.node.node_id for o in out}]
    hits = []
    for item in out:
        before = by_id[item.node.node_id]
        meta = item.node.metadata["catp"]
        assert item.score == before.score
        assert item.node.ref_doc_id == before.node.ref_doc_id
        assert {k: v for k, v in item.node.metadata.items() if k != "catp"} == before.node.metadata
        source = example_texts()[item.node.metadata["source"]]
        assert item.node.get_content() == " … ".join(source[s["start"]:s["end"]] for s in meta["source_kept"])
        assert "catp" not in item.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "catp" not in item.node.get_content(metadata_mode=MetadataMode.EMBED)
        if item.node.metadata["source"] == "contract_en.txt":
            hits.append(covers(meta["source_kept"], ANSWER_AT, ANSWER_AT + len(ANSWER)))
    assert True in hits
    total_in = sum(token_count(n.node.get_content()) for n in retrieved)
    assert sum(n.node.metadata["catp"]["output_tokens"] for n in out) <= total_in // 6
    assert all("catp" not in n.node.metadata for n in retrieved)


# -- Haystack ----------------------------------------------------------------------------------------------------

def test_haystack_component_in_a_bm25_pipeline():
    from haystack import Document, Pipeline
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from catp.integrations.haystack import CatpDocumentPruner

    store = InMemoryDocumentStore()
    docs = [Document(content=text, meta={"source": name}) for name, text in example_texts().items()]
    store.write_documents(DocumentSplitter(split_by="word", split_length=300, split_overlap=0).run(docs)["documents"])
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=8))
    pipe.add_component("pruner", CatpDocumentPruner(ratio="1/8", shared=True))
    pipe.connect("retriever.documents", "pruner.documents")
    query = QUESTION
    result = pipe.run({"retriever": {"query": query}, "pruner": {"query": query}}, include_outputs_from={"retriever"})
    retrieved = {d.id: d for d in result["retriever"]["documents"]}
    out = result["pruner"]["documents"]
    assert out and all(d.id in retrieved for d in out)
    for doc in out:
        before = retrieved[doc.id]
        meta = doc.meta["catp"]
        assert doc.score == before.score and {k: v for k, v in doc.meta.items() if k != "catp"} == before.meta
        assert doc.content == " … ".join(before.content[s["start"]:s["end"]] for s in meta["kept"])
    total_in = sum(token_count(d.content) for d in retrieved.values())
    assert sum(d.meta["catp"]["output_tokens"] for d in out) <= total_in // 8
    assert ANSWER in "\n".join(d.content for d in out)
    # serializable like any component (Haystack 3 loads only modules allowed by name)
    again = Pipeline.from_dict(pipe.to_dict(), allowed_modules=["catp.integrations.haystack"])
    assert again.get_component("pruner").ratio == "1/8"


# -- the real vLLM server ----------------------------------------------------------------------------------------

@pytest.mark.vllm
@pytest.mark.slow
def test_langchain_chain_to_the_vllm_server_with_its_budget(vllm_server):
    """Budget from the server (as `catp ask` reads it), prompt by catp's template, sent by ChatOpenAI."""
    from langchain_openai import ChatOpenAI

    from catp.backends.budget import ChatCounter, engine_budget
    from catp.backends.client import VLLMClient
    from catp.backends.templates import load_templates
    from catp.integrations.langchain import CatpCompressor

    max_tokens = 16
    chunks = langchain_chunks()
    retrieved = keyword_retriever(chunks, k=6).invoke(QUESTION)
    compressor = CatpCompressor(server=vllm_server, shared=True, max_tokens=max_tokens)
    docs = compressor.compress_documents(retrieved, QUESTION)
    template = load_templates(None)["en"]
    with VLLMClient(vllm_server) as backend:
        skeleton = template.render("", QUESTION, gap="…")
        expected = engine_budget(backend, ChatCounter(backend), skeleton, max_tokens=max_tokens).document_budget.value
    budget = docs[0].metadata["catp"]["budget"]  # the document budget less the blank lines between the documents
    assert docs and all(d.metadata["catp"]["budget"] == budget for d in docs)
    assert expected - 2 * (len(retrieved) - 1) <= budget < expected
    assert sum(d.metadata["catp"]["output_tokens"] for d in docs) <= budget
    assert sum(d.metadata["catp"]["input_tokens"] for d in docs) > 2 * expected  # the server's room forced a cut
    document = "\n\n".join(d.page_content for d in docs)
    messages = [(m["role"], m["content"]) for m in template.render(document, QUESTION, gap="…")]
    llm = ChatOpenAI(base_url=str(vllm_server), api_key="none", model=vllm_server.model, max_tokens=max_tokens,
                     temperature=0, max_retries=0, timeout=60)
    reply = llm.invoke(messages)
    usage = reply.usage_metadata
    assert reply.response_metadata["finish_reason"] in ("stop", "length")
    assert sum(d.metadata["catp"]["output_tokens"] for d in docs) < usage["input_tokens"]
    assert usage["input_tokens"] + max_tokens <= vllm_server.max_model_len


# -- the docs' snippets ------------------------------------------------------------------------------------------

def doc_snippets() -> list[str]:
    text = (ROOT / "docs/integrations.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "server=" not in b]  # no server here


def test_the_docs_show_a_snippet_per_framework():
    snippets = "\n".join(doc_snippets())
    for module in ("langchain", "llama_index", "haystack"):
        assert f"from catp.integrations.{module} import" in snippets


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(doc_snippets())))
def test_the_docs_snippets_run_as_written(index):
    out = subprocess.run([sys.executable, "-c", doc_snippets()[index]], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert ANSWER in out.stdout or "seat of the arbitration" in out.stdout.lower(), out.stdout[-2000:]


@pytest.mark.parametrize("budget", [0, 25, 150, 900])
def test_a_shared_budget_is_never_exceeded_and_offsets_hold(budget):
    from catp.integrations.core import DocumentsPruner

    texts = example_texts()
    chunks = [texts[name][i:i + 1500] for name in ("contract_zh.txt", "report_en.txt", "medical_zh.txt")
              for i in (0, 9000, 21000)] + ["", "   "]
    pruned = DocumentsPruner(budget=budget, shared=True).prune(chunks, "违约金 and net revenue, 体温")
    assert sum(p.output_tokens for p in pruned) <= budget
    assert sum(token_count(p.text) for p in pruned[:-2]) <= budget  # blank texts pass through, uncounted
    for chunk, p in zip(chunks, pruned):
        assert p.text == " … ".join(chunk[s.start:s.end] for s in p.kept)
        assert all(chunk[d.start:d.end] == d.text for d in p.dropped_protected)
    assert [p.text for p in pruned[-2:]] == ["", "   "]  # blank texts pass through
    if budget >= 150:
        assert sum(not p.empty for p in pruned[:-2]) >= 3  # shared among the documents, not one filled first
