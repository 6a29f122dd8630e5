"""E3C corpus (hltfbk/E3C-Corpus), English clinical case reports: data_collection/English/layer2 and layer3.

Each file is one JSON document ({"id", "source", "text", ...}); the text is returned whole under its id, after a
header line naming the document and its source, as ../shared/evals-data/e3c_en.dev.jsonl does. Layer 1 (the eval
set) is never used.
"""

from __future__ import annotations

import json

from train.sources import extractor


@extractor("e3c_en_layer23_json")
def e3c_en_layer23_json(data: bytes) -> dict[str, str]:
    doc = json.loads(data.decode("utf-8"))
    key = doc["id"]
    if not key.startswith("EN"):
        raise ValueError(f"{key}: not an English E3C document")
    return {key: f"=== {key} ({doc.get('source', '')}) ===\n{doc['text']}"}
