"""Training the keep-model (issue 31): data, labels and training scripts, outside the runtime package.

- `train/sources/`: one module per public corpus, each registering an extractor that turns one fetched file
  into documents (key -> text).
- `train/labels/*.jsonl`: expert keep-labels, one document a line (train/DATA.md says how they were written).
- `python -m train.fetch`: rebuilds every labelled text from the fetched repositories and checks its sha256.
- `python -m train.check FILE...`: validates labels (quotes exact, kinds known, hygiene against the evals).
"""
