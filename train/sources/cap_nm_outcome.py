"""Caselaw Access Project, New Mexico appellate opinions, as annotated in chinmusique/outcome-prediction.

data/manual_annotation/<id>.json holds one CAP case: {"name": "<id>.xml", "content": "<opinion text>",
"annotations": [...]}. The extractor returns {"<id>": content}, the opinion text exactly as stored (the
corpus's own text: CAP plain text with its paragraph markers {1}, {2}, ...; line breaks are not present in
this copy). The outcome annotations are not part of the document and are ignored.
"""

from __future__ import annotations

import json

from train.sources import extractor


@extractor("cap_nm_outcome")
def cap_nm_outcome(data: bytes) -> dict[str, str]:
    row = json.loads(data.decode("utf-8"))
    key = str(row["name"]).rsplit(".", 1)[0]
    return {key: row["content"]}
