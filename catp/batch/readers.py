"""Reading a batch's inputs: files, folders (their document files), JSONL lines and Parquet rows, each
becoming one `Item` (a text, a path for the worker to read and decode, or a reading error), in input order.

JSONL rows: the text is in `text` and the id in `id` (both field names configurable; a missing id
becomes `FILE:LINE`). Parquet: the same, as columns (a missing id becomes `FILE:ROW`, 1-based). A row
may carry its own `budget` or `ratio` (replacing the batch's), `question` and `domain`. pyarrow
(optional: catp[parquet]) is imported only when a Parquet file is read.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from catp.batch.options import BatchOptions
from catp.errors import CatpError

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")

@dataclass
class Item:
    """One input document: text (JSONL) or a path (text file) for the worker, or a reading error."""

    index: int
    id: object
    text: str | None = None
    path: str | None = None
    overrides: dict = field(default_factory=dict)
    error: str | None = None
    where: str | None = None  # FILE:LINE or FILE:ROW of a record, for its pruning errors


# what a folder gives by default: text, Markdown, PDF, DOCX, HTML, and JSONL or Parquet (a document a row)
DOCUMENT_SUFFIXES = (".txt", ".text", ".md", ".markdown", ".pdf", ".docx", ".html", ".htm", ".xhtml",
                     *JSONL_SUFFIXES, *PARQUET_SUFFIXES)


class InFolder(str):
    """A path found in a folder (not named by the user): one that is not a regular file (a broken link, a link
    to a device, a FIFO) is an error row, never read."""


def folder_files(folder: Path, glob: str | None = None, exclude: str | None = None) -> list[Path]:
    """The files of `folder` to read, sorted: recursive, hidden files and folders skipped, those matching
    `glob` (None: those with a DOCUMENT_SUFFIXES suffix), every entry but folders (a broken link is one too,
    and gets its error row), and not `exclude` (the output, a real path) nor anything inside it."""
    out = []
    for p in folder.rglob(glob or "*"):
        if any(part.startswith(".") for part in p.relative_to(folder).parts) or p.is_dir():
            continue
        if glob is None and p.suffix.lower() not in DOCUMENT_SUFFIXES:
            continue
        if exclude is not None:
            real = os.path.realpath(p)
            if real == exclude or real.startswith(exclude.rstrip(os.sep) + os.sep):
                continue
        out.append(p)
    return sorted(out)


def expand_inputs(inputs: Iterable[str | Path], glob: str | None = None, output=None) -> list[str]:
    """Files in the order given; a folder becomes its files (`folder_files`: `glob`, else the document types;
    the output, when it lies inside the folder, left out: it is written, not read). '-' (stdin, JSONL) and
    missing paths are kept as they are."""
    exclude = None
    if isinstance(output, (str, Path)) and str(output) != "-":
        exclude = os.path.realpath(output)
    out: list[str] = []
    for raw in inputs:
        name = str(raw)
        path = Path(name)
        if name != "-" and path.is_dir():
            out.extend(InFolder(p) for p in folder_files(path, glob, exclude))
        else:
            out.append(name)
    return out


def _not_a_file(name: str) -> str | None:
    """Why a path found in a folder, or a link, cannot be read as a document; None when it can be tried (a
    FIFO named by the user, /dev/fd/63 of a shell's <(...), is read)."""
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        if os.path.islink(name):
            return f"{name}: a broken link (its target {os.readlink(name)!r} does not exist)"
        return None
    except OSError:
        return None  # the reader says why
    if stat.S_ISREG(mode):
        return None
    device = stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
    if isinstance(name, InFolder) or device:
        kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
                else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        return f"{name}: {kind}, not a document file; left unread"
    return None


def check_output_is_not_an_input(output, sources: list[str]) -> None:
    """Writing starts by emptying the output: were it one of the inputs (or a Parquet output folder
    holding one), the input would be gone before it is read."""
    if not isinstance(output, (str, Path)) or str(output) == "-":
        return
    target = os.path.realpath(output)
    inside = target.rstrip(os.sep) + os.sep
    for name in sources:
        path = "" if name == "-" else os.path.realpath(name)
        if path == target or path.startswith(inside):
            raise CatpError(f"{output}: the output is also an input ({name}); write it elsewhere")


def is_jsonl(name: str) -> bool:
    return name == "-" or name.lower().endswith(JSONL_SUFFIXES)


COUNT_MAX_BYTES = 1 << 30  # JSONL inputs larger than this together are not counted first (a bar without total)


def count_documents(sources: list[str]) -> int | None:
    """How many rows the sources will give (JSONL: non-blank lines; Parquet: from its footer), or None
    when stdin is read or the JSONL inputs hold more than COUNT_MAX_BYTES (counting would read them all
    once more before pruning starts)."""
    try:
        if sum(os.path.getsize(n) for n in sources if n != "-" and is_jsonl(n)) > COUNT_MAX_BYTES:
            return None
    except OSError:
        pass  # a missing file: counted below as one error row
    total = 0
    for name in sources:
        if name == "-":
            return None
        if is_parquet(name):
            try:
                total += parquet_rows(name)
            except UNREADABLE_PARQUET:
                total += 1  # one error row
            continue
        if not is_jsonl(name):
            total += 1
            continue
        try:
            with open(name, "rb") as fh:
                total += sum(1 for line in fh if line.strip())
        except OSError:
            total += 1  # it will be one error row
    return total


def iter_items(sources: list[str], options: BatchOptions) -> Iterator[Item]:
    index = 0
    for name in sources:
        if is_parquet(name):
            for item in _parquet_items(name, options, index):
                yield item
                index += 1
            continue
        if not is_jsonl(name):
            problem = _not_a_file(name) if isinstance(name, InFolder) or os.path.islink(name) else None
            yield Item(index, str(name), path=str(name), error=problem)
            index += 1
            continue
        for item in _jsonl_items(name, options, index):
            yield item
            index += 1


def _jsonl_items(name: str, options: BatchOptions, first_index: int) -> Iterator[Item]:
    index = first_index
    try:
        fh = sys.stdin.buffer if name == "-" else open(name, "rb")
    except OSError as exc:
        yield Item(index, name, error=f"{name}: cannot open: {exc.strerror or exc}")
        return
    label = "<stdin>" if name == "-" else name
    try:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            yield _jsonl_item(raw, f"{label}:{lineno}", options, index)
            index += 1
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def _jsonl_item(raw: bytes, where: str, options: BatchOptions, index: int) -> Item:
    try:
        row = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return Item(index, where, error=f"{where}: not a JSON line ({exc})")
    if not isinstance(row, dict):
        return Item(index, where, error=f"{where}: a line must be a JSON object with a {options.text_field!r} field")
    return record_item(row, where, options, index)


def record_item(row: dict, where: str, options: BatchOptions, index: int = 0) -> Item:
    """One Item from one input record (a JSONL object or a Parquet row, as Python values): the text,
    the id (else `where`), and the row's own budget/ratio/question/domain. Both engines use this."""
    doc_id = row.get(options.id_field)
    if doc_id is None:
        doc_id = where
    elif not isinstance(doc_id, (str, int, float, bool)):
        doc_id = str(doc_id)  # a Parquet date or decimal: written as text
    text = row.get(options.text_field)
    if not isinstance(text, str):
        what = "missing" if text is None else f"of type {type(text).__name__}, not a string"
        return Item(index, doc_id, error=f"{where}: field {options.text_field!r} is {what}")
    overrides = {k: row[k] for k in ("budget", "ratio", "question", "domain") if row.get(k) is not None}
    return Item(index, doc_id, text=text, overrides=overrides, where=where)


def is_parquet(name: str) -> bool:
    return name.lower().endswith(PARQUET_SUFFIXES)


# A Parquet file that cannot be opened (missing: OSError; not Parquet or corrupt: pyarrow's ArrowInvalid,
# a ValueError) gives one error row.
UNREADABLE_PARQUET = (OSError, ValueError)


def require_pyarrow():
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet as pq
    except ImportError:
        raise CatpError("Parquet input or output needs pyarrow: pip install 'catp[parquet]'") from None
    return pq


def parquet_rows(name: str) -> int:
    return require_pyarrow().ParquetFile(name).metadata.num_rows


def parquet_columns(name: str, options: BatchOptions) -> list[str]:
    """The columns to read from a Parquet file: text, id and the per-row overrides it has."""
    names = require_pyarrow().read_schema(name).names
    if options.text_field not in names:
        raise CatpError(f"{name}: no column {options.text_field!r} (name the text column with --text-field)")
    return [c for c in (options.id_field, options.text_field, "budget", "ratio", "question", "domain")
            if c in names]


def _parquet_items(name: str, options: BatchOptions, first_index: int) -> Iterator[Item]:
    """Rows of a Parquet file (read in batches, as Python values); a row without an id gets `FILE:ROW`
    (1-based, as JSONL's `FILE:LINE`)."""
    pq = require_pyarrow()
    index = first_index
    try:
        columns = parquet_columns(name, options)
        reader = pq.ParquetFile(name)
    except UNREADABLE_PARQUET as exc:
        yield Item(index, name, error=f"{name}: cannot open: {exc}")
        return
    for batch in reader.iter_batches(batch_size=256, columns=columns):
        for row in batch.to_pylist():
            yield record_item(row, f"{name}:{index - first_index + 1}", options, index)
            index += 1
