"""The progress bar `catp batch` draws on stderr (only on a terminal: a log file gets the summary line alone)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class ProgressBar:
    """Rows done (written or skipped) out of `total` (None: unknown), and the errors so far."""

    def __init__(self, total: int | None) -> None:
        console = Console(stderr=True)
        self.progress = Progress(TextColumn("pruning"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[errors]} errors"), TimeElapsedColumn(),
                                 TimeRemainingColumn(), console=console, transient=False,
                                 disable=not console.is_terminal)
        self.task = self.progress.add_task("pruning", total=total, errors=0)
        self.progress.start()

    def advance(self, **fields) -> None:
        self.progress.update(self.task, advance=1, **fields)

    def stop(self) -> None:
        self.progress.stop()
