"""LlamaIndex: `CatpPostprocessor`, a node postprocessor (`pip install 'catp[llamaindex]'`).

    from catp.integrations.llama_index import CatpPostprocessor
    engine = index.as_query_engine(node_postprocessors=[CatpPostprocessor(budget=2000, shared=True)])

Each node keeps its id, score, relationships and metadata; its text becomes its extract and `metadata["catp"]`
says what was kept (catp.integrations.core.PrunedText.metadata), with `source_kept`: the kept spans as offsets
into the source document when the node knows its own (`start_char_idx`). The "catp" key is excluded from what
the LLM and the embedder see. A node nothing of which survives a shared budget is left out (`drop_empty=False`
keeps it).
"""

from __future__ import annotations

import logging

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from catp.integrations.core import PrunedText, PrunerSettings

log = logging.getLogger("catp.integrations")


class CatpPostprocessor(PrunerSettings, BaseNodePostprocessor):
    """Prunes retrieved nodes to a token budget with the query string as catp's question.

    Budget: `budget` (tokens), `ratio` ("1/6") or `server` (a vLLM server URL: `catp ask`'s document budget), per
    node or, with `shared=True`, for all nodes together (a server's budget is one prompt's: split evenly when not
    shared). `domain`: "auto" or a domain; `rules`: rule files; `tokenizer`, `scorer` as for `catp.Pruner`.
    `pruner`: a ready `catp.Pruner` to use (and share) instead of building one from these settings.
    """

    @classmethod
    def class_name(cls) -> str:
        return "CatpPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        query = query_bundle.query_str if query_bundle is not None else None
        texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        pruned = self._pruner.prune(texts, query)
        return [_with_extract(n, p) for n, p in zip(nodes, pruned) if _keep(n, p, self.drop_empty)]


def _with_extract(item: NodeWithScore, pruned: PrunedText) -> NodeWithScore:
    node = item.node.model_copy(deep=True)  # same id_, relationships, start/end_char_idx
    meta = pruned.metadata()
    base = node.start_char_idx
    if base is not None:
        meta["source_kept"] = [{"start": base + s["start"], "end": base + s["end"]} for s in meta["kept"]]
    node.metadata["catp"] = meta
    for keys in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
        if "catp" not in keys:
            keys.append("catp")
    node.set_content(pruned.text)
    return NodeWithScore(node=node, score=item.score)


def _keep(item: NodeWithScore, pruned: PrunedText, drop_empty: bool) -> bool:
    if not pruned.empty or not drop_empty:
        return True
    if pruned.dropped_protected:
        log.warning("catp: node %s left out under the shared budget, with %d protected spans (%s)",
                    item.node.node_id, len(pruned.dropped_protected),
                    ", ".join(sorted({d.category for d in pruned.dropped_protected})))
    return False
