"""Where `catp batch` writes its rows: JSONL (a file or stdout) or Parquet (a folder of part files),
and what an earlier, interrupted run already wrote there (for `resume`).

Rows are written in the order they come, which is input order on both engines. With `resume`, the
ids already in the output are read first; the run then skips those input rows and appends the rest,
so a run that crashed and is run again ends with the same rows, in the same order, as a clean run.

JSONL: one row per line. A crash can leave a last line cut short; resuming cuts it off (its row is
pruned again). Parquet: `OUT` is a folder of `part-NNNNN.parquet` files of up to `rows_per_file` rows
each, every one written to a `.tmp` file and renamed when complete, so a crash loses at most the rows
not yet in a finished part; resuming deletes left-over `.tmp` files. Columns:

    id string, text string, kept list<struct<start int64, end int64, reasons list<string>>>,
    stats string (the stats object as JSON), warnings list<string>, error string

An id that is not a string is written to Parquet as its JSON text (7 -> "7"), which is also how
ids are compared when resuming, in either format.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import IO

from catp.batch.readers import PARQUET_SUFFIXES, require_pyarrow
from catp.errors import CatpError
from catp.jsontext import escape_surrogates, json_line

PART_PREFIX = "part-"
LOCK_NAME = ".catp-batch.lock"  # in a Parquet output folder


def id_key(doc_id) -> str:
    """How ids are compared when resuming: a string as it is, anything else as its JSON text; in either, a lone
    surrogate (a file name that is not UTF-8) as its escape \\udcb9, which UTF-8 (and Parquet) can hold."""
    return escape_surrogates(doc_id if isinstance(doc_id, str) else json.dumps(doc_id, ensure_ascii=False))


def is_parquet_output(output) -> bool:
    return isinstance(output, (str, Path)) and str(output).lower().rstrip("/").endswith(PARQUET_SUFFIXES)


def open_output(output: str | Path | IO[str], *, resume: bool = False, rows_per_file: int = 1000):
    """A writer for `output`: '-' or a text stream (JSONL), a path ending in .parquet (a Parquet
    folder), or any other path (a JSONL file). With `resume`, `writer.done` counts the keys of the
    ids already written and new rows are appended; without it the output starts empty."""
    if is_parquet_output(output):
        return ParquetWriter(Path(output), resume=resume, rows_per_file=rows_per_file)
    if not isinstance(output, (str, Path)) or str(output) == "-":
        if resume:
            raise CatpError("--resume needs an output file (-o/--out PATH), not stdout")
        return JsonlWriter(sys.stdout if isinstance(output, (str, Path)) else output, close=False)
    return JsonlWriter.open(Path(output), resume=resume)


class JsonlWriter:
    def __init__(self, stream: IO[str], *, close: bool, done: Counter | None = None):
        self.stream = stream
        self.close_stream = close
        self.done: Counter = done or Counter()

    @classmethod
    def open(cls, path: Path, *, resume: bool) -> JsonlWriter:
        """Opened and locked before anything is read or emptied: a second writer is refused, not mixed in."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
                    raise CatpError(f"{path}: cannot write the output ({exc.strerror or exc})") from exc
        stream = open(fd, "r+", encoding="utf-8", newline="")
        try:
            lock_output(stream, path)
            done: Counter = Counter()
            if resume:
                done = _resume_jsonl(path)
                stream.seek(0, os.SEEK_END)
            else:
                stream.truncate(0)
        except BaseException:
            stream.close()
            raise
        return cls(stream, close=True, done=done)

    def write(self, row: dict) -> None:
        self.stream.write(json_line(row) + "\n")  # a non-UTF-8 file name in an id or error: escaped
        self.stream.flush()  # each row reaches the file (or pipe) whole as it is done: a kill loses none

    def close(self) -> None:
        if self.close_stream:
            self.stream.close()
        else:
            self.stream.flush()


def lock_output(stream, path) -> None:
    """An exclusive lock on the output for this run (flock: released when the file closes, or the process dies).
    Two runs writing one output mixed their rows (260 lines for 200 documents, one not JSON)."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock
        return
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
            raise CatpError(f"{path}: another catp batch is writing this output; wait for it, or write elsewhere") from None
    except OSError:
        pass  # a file system without locks


def _resume_jsonl(path: Path) -> Counter:
    """The id keys of the complete rows in `path`, with how many rows each, after cutting off a last
    line left unfinished. A complete line that is not a row means the output is corrupt: an error."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):  # a crash mid-line: that row is pruned again
        with open(path, "r+b") as fh:
            fh.truncate(end)
    done: Counter = Counter()
    for number, line in enumerate(data[:end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not (isinstance(row, dict) and "id" in row):
                    raise CatpError(f"{path}:{number}: not a row of catp batch: the output is corrupt (two runs writing it "
                            "at once?); check it, or run again without --resume")
        done[id_key(row["id"])] += 1
    return done


def parquet_schema():
    import pyarrow as pa

    kept = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("reasons", pa.list_(pa.string()))]))
    return pa.schema([("id", pa.string()), ("text", pa.string()), ("kept", kept), ("stats", pa.string()),
                      ("warnings", pa.list_(pa.string())), ("error", pa.string())])


class ParquetWriter:
    def __init__(self, folder: Path, *, resume: bool, rows_per_file: int):
        require_pyarrow()
        if folder.exists() and not folder.is_dir():
            raise CatpError(f"{folder}: Parquet output is a folder of part files, and this is a file")
        folder.mkdir(parents=True, exist_ok=True)
        self.lock = open(folder / LOCK_NAME, "a")  # kept open: the lock lasts the run
        try:
            lock_output(self.lock, folder)
        except BaseException:
            self.lock.close()
            raise
        self.folder = folder
        self.rows_per_file = max(1, rows_per_file)
        self.buffer: list[dict] = []
        self.done: Counter = Counter()
        for tmp in folder.glob(f"{PART_PREFIX}*.tmp"):
            tmp.unlink()
        parts = sorted(folder.glob(f"{PART_PREFIX}*.parquet"))
        if resume:
            import pyarrow.parquet as pq

            for part in parts:
                self.done.update(pq.read_table(part, columns=["id"]).column("id").to_pylist())
        else:
            for part in parts:
                part.unlink()
            parts = []
        self.next_part = int(parts[-1].stem[len(PART_PREFIX):]) + 1 if parts else 0

    def write(self, row: dict) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= self.rows_per_file:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([_parquet_row(r) for r in self.buffer], schema=parquet_schema())
        final = self.folder / f"{PART_PREFIX}{self.next_part:05d}.parquet"
        tmp = final.with_suffix(".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, final)
        self.next_part += 1
        self.buffer = []

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.lock.close()


def _parquet_row(row: dict) -> dict:
    kept = None if row["kept"] is None else [
        {"start": k["start"], "end": k["end"], "reasons": list(k["reasons"])} for k in row["kept"]]
    stats = None if row["stats"] is None else json_line(row["stats"])
    error = None if row["error"] is None else escape_surrogates(row["error"])
    return {"id": id_key(row["id"]), "text": row["text"], "kept": kept, "stats": stats,
            "warnings": [escape_surrogates(w) for w in row["warnings"] or []], "error": error}


def read_rows(output: str | Path) -> list[dict]:
    """The rows of a JSONL file or a Parquet output folder, in order, as dicts (Parquet's `stats`
    parsed back from JSON; its ids are strings)."""
    path = Path(output)
    if not is_parquet_output(path):
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    import pyarrow.parquet as pq

    rows = []
    for part in sorted(path.glob(f"{PART_PREFIX}*.parquet")):
        for row in pq.read_table(part).to_pylist():
            row["stats"] = None if row["stats"] is None else json.loads(row["stats"])
            rows.append(row)
    return rows
