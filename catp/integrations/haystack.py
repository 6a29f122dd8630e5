"""Haystack 2: `CatpDocumentPruner`, a component with `documents` and `query` inputs (`pip install 'catp[haystack]'`).

    from catp.integrations.haystack import CatpDocumentPruner
    pipe.add_component("pruner", CatpDocumentPruner(budget=2000, shared=True))
    pipe.connect("retriever.documents", "pruner.documents")

Output `documents`: each with its id, score and meta kept, its content the extract, and `meta["catp"]`
(catp.integrations.core.PrunedText.metadata: kept spans as offsets into the original content, tokens, budget,
protected spans dropped). A document nothing of which survives a shared budget is left out (`drop_empty=False`
keeps it). Documents without text content (blobs) pass through untouched.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from haystack import Document, component

from catp.config import DEFAULTS
from catp.integrations.core import DocumentsPruner, PrunedText

log = logging.getLogger("catp.integrations")


@component
class CatpDocumentPruner:
    """Prunes retrieved documents with the query as catp's question.

    Budget: `budget` (tokens), `ratio` ("1/6") or `server` (a vLLM server URL: `catp ask`'s document budget), per
    document or, with `shared=True`, for all together (a server's budget is one prompt's: split evenly when not
    shared). `domain`: "auto" or a domain; `rules`: rule files; `tokenizer`, `scorer` as for `catp.Pruner`.
    """

    def __init__(self, budget: int | None = None, ratio: float | str | None = None, server: str | None = None,
                 shared: bool = False, domain: str | None = DEFAULTS.domain, rules: str | list[str] | None = None,
                 tokenizer: str | None = DEFAULTS.tokenizer, scorer: str = DEFAULTS.scorer,
                 max_tokens: int = DEFAULTS.max_tokens, concurrency: int = DEFAULTS.concurrency,
                 model: str | None = None, drop_empty: bool = True) -> None:
        # kept under their own names: Haystack serializes a component from its init parameters
        self.budget, self.ratio, self.server, self.shared = budget, ratio, server, shared
        self.domain, self.rules, self.tokenizer, self.scorer = domain, rules, tokenizer, scorer
        self.max_tokens, self.concurrency, self.model, self.drop_empty = max_tokens, concurrency, model, drop_empty
        self._pruner = DocumentsPruner(
            budget=budget, ratio=ratio, server=server, shared=shared, domain=domain,
            rules=rules or (), tokenizer=tokenizer, scorer=scorer, max_tokens=max_tokens,
            concurrency=concurrency, model=model)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], query: str | None = None) -> dict[str, list[Document]]:
        with_text = [i for i, d in enumerate(documents) if d.content is not None]
        pruned = dict(zip(with_text, self._pruner.prune([documents[i].content for i in with_text], query)))
        out = []
        for i, doc in enumerate(documents):
            if i not in pruned:
                out.append(doc)
            elif _keep(doc, pruned[i], self.drop_empty):
                out.append(dataclasses.replace(doc, content=pruned[i].text,
                                               meta={**doc.meta, "catp": pruned[i].metadata()}))
        return {"documents": out}

    @component.output_types(documents=list[Document])
    async def run_async(self, documents: list[Document], query: str | None = None) -> dict[str, list[Document]]:
        """`run` in a worker thread: the pruning is CPU work, the event loop stays free."""
        return await asyncio.to_thread(self.run, documents, query)


def _keep(doc: Document, pruned: PrunedText, drop_empty: bool) -> bool:
    if not pruned.empty or not drop_empty:
        return True
    if pruned.dropped_protected:
        log.warning("catp: document %s left out under the shared budget, with %d protected spans (%s)",
                    doc.id, len(pruned.dropped_protected),
                    ", ".join(sorted({d.category for d in pruned.dropped_protected})))
    return False
