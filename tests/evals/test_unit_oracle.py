"""evals/unit_oracle.py: the greedy oracle keeps the facts that fit, never over the budget."""

from __future__ import annotations

from catp.tokens import load_token_counter
from evals.unit_oracle import GAP, oracle, quote_bound

TEXT = ("The Licensee shall pay a fee of US$1,250,000, payable within thirty days, together with interest at the "
        "statutory rate and any taxes, duties and levies that apply to it. Nothing else matters here at all. "
        "This Agreement is governed by the laws of Singapore.")


def atoms_and_facts():
    cuts = [0, TEXT.index(" payable"), TEXT.index(" Nothing"), TEXT.index(" This"), len(TEXT)]
    atoms = [(a + (TEXT[a] == " "), b) for a, b in zip(cuts, cuts[1:])]
    facts = [(TEXT.index("US$1,250,000"), TEXT.index("US$1,250,000") + 12), (TEXT.index("laws of Singapore"), len(TEXT) - 1)]
    return atoms, facts


def test_the_oracle_keeps_the_facts_that_fit_within_the_budget():
    counter = load_token_counter(None)
    starts = counter.token_starts(TEXT)
    atoms, facts = atoms_and_facts()
    fee, law = (counter.count(TEXT[a:b]) for a, b in (atoms[0], atoms[3]))
    assert oracle(TEXT, atoms, facts, len(starts), counter, starts)[0] == 2
    kept, used, gap = oracle(TEXT, atoms, facts, fee + law + counter.count(GAP), counter, starts)
    assert kept == 2 and gap == counter.count(GAP) and used <= fee + law + gap  # both, one marker between
    kept, used, _ = oracle(TEXT, atoms, facts, max(fee, law), counter, starts)
    assert kept == 1 and used <= max(fee, law)
    assert oracle(TEXT, atoms, facts, 3, counter, starts)[0] == 0  # nothing fits


def test_the_quote_bound_is_exact_and_never_below_the_unit_oracle():
    counter = load_token_counter(None)
    starts = counter.token_starts(TEXT)
    atoms, facts = atoms_and_facts()
    fee, law = (counter.count(TEXT[a:b]) for a, b in facts)
    gap = counter.count(GAP)
    assert quote_bound(TEXT, facts, fee + law + gap, counter) == 2  # both quotes, one marker between
    assert quote_bound(TEXT, facts, fee + law + gap - 1, counter) == 1
    assert quote_bound(TEXT, facts, min(fee, law) - 1, counter) == 0
    assert quote_bound(TEXT, facts, fee + law + gap - 1, counter, share=0.5) == 2  # half of each quote may go
    for budget in range(0, len(starts) + 1, 7):
        assert quote_bound(TEXT, facts, budget, counter) >= oracle(TEXT, atoms, facts, budget, counter, starts)[0]


def test_the_command_prints_a_row_per_granularity_and_ratio(tmp_path, capsys):
    import json

    from evals.unit_oracle import main

    line = {"id": "fee", "domain": "legal", "lang": "en", "text": TEXT,
            "facts": [{"quote": "US$1,250,000", "kind": "fee", "why": "the fee"},
                      {"quote": "the laws of Singapore", "kind": "governing_law", "why": "law"}]}
    (tmp_path / "one.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert main(["--data", str(tmp_path / "one.jsonl"), "--ratios", "1/2,1", "--windows", "16"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| ") and "---" not in r][1:]
    names = ["catp-atoms", "sentences", "catp-units", "clauses", "window-16", "quotes (bound)", "quotes at 90 % (bound)"]
    assert [r.split(" | ")[0][2:] for r in rows] == [n for n in names for _ in (1, 2)]
    assert all(r.endswith(" |") for r in rows) and rows[-1].split(" | ")[-2] == "1.00"  # all facts, whole text
