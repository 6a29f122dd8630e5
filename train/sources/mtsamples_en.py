"""MTSamples medical transcription samples, one sample per text file (raulista1997/benchmarkdata,
mtsamples_processed/*.txt: specialty, sample name, description, then the transcription and keywords).

The file is decoded as UTF-8 and returned whole under the key "sample".
"""

from __future__ import annotations

from train.sources import extractor


@extractor("mtsamples_txt")
def mtsamples_txt(data: bytes) -> dict[str, str]:
    return {"sample": data.decode("utf-8")}
