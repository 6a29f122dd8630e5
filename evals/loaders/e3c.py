"""E3C as distributed: data_annotation/<Language>/layer1/*.xml (UIMA CAS XMI from WebAnno)."""

from __future__ import annotations

from pathlib import Path

from evals.loaders.base import DataError, RecordJoiner, head_of, set_name
from evals.schema import DataSet, Gold

E3C_KINDS = {"CLINENTITY": "entity", "BODYPART": "entity", "RML": "number", "TIMEX3": "date"}


def is_e3c_xmi(path: Path) -> bool:
    head = head_of(min(path.glob("*.xml"), default=None)).lower() if path.is_dir() else ""
    return "xmi" in head and "sofa" in head


def load_e3c_xmi(path: Path, min_chars: int = 15_000) -> list[DataSet]:
    """Case reports in file-name order, joined into documents of at least `min_chars`, each
    under a header line `=== docName (docSource) ===`. Gold: clinical entities and body parts
    (entity), RML results and measurements (number), TIMEX3 by class (date)."""
    joined = RecordJoiner(path, min_chars, domain="medical", source=f"E3C XMI ({path.name}), documents")
    for xml in sorted(path.glob("*.xml")):
        case_text, name, source, spans = _e3c_case(xml)
        joined.begin(name, f"=== {name} ({source}) ===\n")
        base = joined.add(case_text)
        for begin, end, label in spans:
            if 0 <= begin < end <= len(case_text):
                kind = E3C_KINDS[label.split(":")[0]]
                joined.gold.append(Gold(start=base + begin, end=base + end, quote=case_text[begin:end], kind=kind,
                                        label=label))
        joined.end()
    joined.flush()
    return [DataSet(set_name(path), str(path), joined.docs)]


def _e3c_case(xml: Path) -> tuple[str, str, str, list[tuple[int, int, str]]]:
    """(text, docName, docSource, [(begin, end, label)]) of one XMI file."""
    from xml.etree import ElementTree

    try:
        root = ElementTree.parse(xml).getroot()
    except ElementTree.ParseError as exc:
        raise DataError(f"{xml}: not XML ({exc})") from exc
    text, meta, spans = None, {}, []
    for el in root.iter():
        name = el.tag.rsplit("}", 1)[-1]
        if name == "Sofa":
            text = el.get("sofaString", "")
        elif name == "METADATA":
            meta = el.attrib
        elif name in E3C_KINDS and el.get("begin") is not None and el.get("end") is not None:
            label = f"TIMEX3:{el.get('timex3Class', '')}" if name == "TIMEX3" else name
            spans.append((int(el.get("begin")), int(el.get("end")), label))
    if text is None:
        raise DataError(f"{xml}: no cas:Sofa with the document text")
    return text, meta.get("docName", xml.stem), meta.get("docSource", ""), spans
