"""Segment a document into units: headings, table rows, list items, sentences and clauses."""

from catp.segment.splitter import Segmenter, segment

__all__ = ["Segmenter", "segment"]
