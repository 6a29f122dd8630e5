"""The API as a user of numpy / pandas calls it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from catp import Pruner
from catp.errors import BudgetError

TEXT = (Path(__file__).resolve().parents[2] / "examples" / "contract_en.txt").read_text(encoding="utf-8")[:3000]


def test_a_numpy_integer_budget_is_a_budget():
    pruner = Pruner()
    expected = pruner.prune(TEXT, budget=100)
    for budget in (np.int64(100), np.int32(100), np.uint16(100)):
        got = pruner.prune(TEXT, budget=budget)
        assert got.text == expected.text and got.stats.budget == 100 and type(got.stats.budget) is int
    for bad in (np.float64(100.0), np.int64(-1), np.bool_(True), True):
        with pytest.raises(BudgetError):
            pruner.prune(TEXT, budget=bad)
