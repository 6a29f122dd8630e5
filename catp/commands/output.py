"""Writing a command's `-o` file: all of it or nothing, so a failing write never leaves half a file
or loses the one that was there."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from catp.errors import CatpError


def write_output(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file in the same folder, renamed over it when
    complete. A path that exists and is not a regular file (/dev/stdout, a FIFO), or a file in a folder
    this user cannot write to, is written directly."""
    target = Path(os.path.realpath(path))  # a symlink stays a symlink: its target is replaced
    try:
        in_place = target.exists() and (not target.is_file() or not os.access(target.parent, os.W_OK))
        if in_place:  # a device or FIFO; or a writable file in a folder where no new file can be made
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            if mode is not None:
                os.chmod(tmp, mode)
            else:  # mkstemp makes 0600; a new file gets the usual umask-based mode
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise CatpError(f"{path}: cannot write the output ({exc.strerror or exc})") from exc


def echo_text(text: str, nl: bool = True, err: bool = False) -> None:
    """Write document text to stdout (stderr with err) as it is. typer.echo removes ANSI escapes when the
    stream is not a terminal, and the text would then differ from what the offsets index."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + ("\n" if nl else ""))
    stream.flush()
