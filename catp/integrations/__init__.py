"""catp inside RAG frameworks (docs/integrations.md). Nothing is imported here: each module needs its extra.

- `catp.integrations.langchain.CatpCompressor`: a LangChain document compressor (`pip install 'catp[langchain]'`).
- `catp.integrations.llama_index.CatpPostprocessor`: a LlamaIndex node postprocessor (`catp[llamaindex]`).
- `catp.integrations.haystack.CatpDocumentPruner`: a Haystack component (`catp[haystack]`).
- `catp.integrations.core.DocumentsPruner`: what the three share, framework-free: several retrieved texts pruned
  each to its budget or together to one, with the question.
"""
