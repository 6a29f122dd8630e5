"""LangChain: `CatpCompressor`, a document compressor (`pip install 'catp[langchain]'`).

    from catp.integrations.langchain import CatpCompressor
    compressor = CatpCompressor(budget=2000, shared=True)
    retriever = ContextualCompressionRetriever(base_compressor=compressor, base_retriever=your_retriever)

Each document's `page_content` becomes its extract (kept spans joined by the gap marker); its metadata is kept,
with `metadata["catp"]` added (catp.integrations.core.PrunedText.metadata: kept spans as offsets into the
original page_content, input/output tokens, the budget, protected spans dropped). A document nothing of which
survives a shared budget is left out (`drop_empty=False` keeps it, empty).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document

from catp.integrations.core import PrunedText, PrunerSettings

log = logging.getLogger("catp.integrations")


class CatpCompressor(PrunerSettings, BaseDocumentCompressor):
    """Prunes retrieved documents with the query as catp's question.

    Budget: `budget` (tokens), `ratio` ("1/6") or `server` (a vLLM server URL: `catp ask`'s document budget), per
    document or, with `shared=True`, for all documents together (a server's budget is always one prompt's: split
    evenly when not shared). `domain`: "auto" or a domain; `rules`: rule files; `tokenizer`, `scorer` as for
    `catp.Pruner`; `max_tokens`, `concurrency`, `model`, `api_key` for the server budget. `pruner`: a ready `catp.Pruner`
    to use (and share) instead of building one from these settings.
    """

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[Document]:
        documents = list(documents)
        pruned = self._pruner.prune([d.page_content for d in documents], query)
        return [_with_extract(doc, p) for doc, p in zip(documents, pruned) if _keep(doc, p, self.drop_empty)]

    async def acompress_documents(self, documents: Sequence[Document], query: str,
                                  callbacks: Callbacks | None = None) -> Sequence[Document]:
        """`compress_documents` in a worker thread: the pruning is CPU work, the event loop stays free."""
        return await asyncio.to_thread(self.compress_documents, documents, query, callbacks)


def _with_extract(doc: Document, pruned: PrunedText) -> Document:
    return Document(page_content=pruned.text, metadata={**doc.metadata, "catp": pruned.metadata()}, id=doc.id)


def _keep(doc: Document, pruned: PrunedText, drop_empty: bool) -> bool:
    if not pruned.empty or not drop_empty:
        return True
    if pruned.dropped_protected:
        log.warning("catp: document %s left out under the shared budget, with %d protected spans (%s)",
                    doc.id or doc.metadata.get("source", "?"), len(pruned.dropped_protected),
                    ", ".join(sorted({d.category for d in pruned.dropped_protected})))
    return False
