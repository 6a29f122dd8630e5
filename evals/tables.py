"""One table model, rendered to the terminal (rich), Markdown and HTML alike."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def to_markdown(self) -> str:
        lines = [f"| {' | '.join(self.columns)} |", "|" + "---|" * len(self.columns)]
        lines += [f"| {' | '.join(_md(c) for c in row)} |" for row in self.rows]
        return "\n".join(lines)

    def to_html(self) -> str:
        head = "".join(f"<th>{inline_html(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{inline_html(c)}</td>" for c in row) + "</tr>" for row in self.rows)
        return f"<h3>{inline_html(self.title)}</h3>\n<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def to_rich(self):
        from rich.table import Table as RichTable

        table = RichTable(title=self.title, title_justify="left")
        for i, c in enumerate(self.columns):
            table.add_column(c, justify="left" if i < 3 else "right", no_wrap=i < 3)
        for row in self.rows:
            table.add_row(*row)
        return table


def _md(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


_CODE = re.compile(r"`([^`]+)`")


def inline_html(text: str) -> str:
    """Markdown's inline `code` as <code>, the rest escaped: report.html showed the backticks literally."""
    return _CODE.sub(r"<code>\1</code>", html.escape(text))
