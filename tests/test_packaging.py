"""The wheel a user installs (`pip install catp`, not the editable checkout the suite runs from) carries every
package, the built-in rule sets and the segmentation patterns, and prunes from a plain install."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True, cwd=out)
    (found,) = out.glob("catp-*.whl")
    return found


def _source_packages() -> set[str]:
    return {str(init.parent.relative_to(ROOT)).replace("/", ".")
            for top in ("catp", "evals") for init in (ROOT / top).rglob("__init__.py")}


def test_wheel_carries_every_package_and_the_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packaged = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert _source_packages() <= packaged, "a package is missing from [tool.setuptools] packages in pyproject.toml"
    for rule_file in (ROOT / "rules").glob("*.yaml"):
        assert f"catp/_rules/{rule_file.name}" in names
    assert not [n for n in names if n.startswith("catp/_rules/") and not n.endswith(".yaml")]  # build tools stay out
    assert "catp/segment/segmentation.yaml" in names
    assert "catp/py.typed" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)


def test_installed_wheel_prunes_with_its_own_rules(wheel, tmp_path):
    """Pruned from the wheel in a folder where the repo's rules/ cannot be reached: the domain's rules (named, and
    detected by --domain auto from the packaged files' keywords) come from catp/_rules, even with a decoy rules/
    folder beside the installed package (where a lookup outside the package, `parents[2]`, would find it)."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    (target / "rules").mkdir()
    (target / "rules" / "common.yaml").write_text("name: decoy\nrules: [not, a, rule]\n", encoding="utf-8")
    script = (
        "import catp, json, sys\n"
        "from catp.rules.loader import builtin_rules_dir\n"
        "text = open(sys.argv[1], encoding='utf-8').read()\n"
        "r = catp.prune(text, domain='legal', ratio=1/6)\n"
        "auto = catp.prune(text, ratio=1/6)\n"
        "print(json.dumps({'module': catp.__file__, 'rules': str(builtin_rules_dir()),\n"
        "                  'out': r.stats.output_tokens, 'in': r.stats.input_tokens, 'kept': len(r.kept),\n"
        "                  'reasons': sorted({x for s in r.kept for x in s.reasons}),\n"
        "                  'auto': auto.stats.domain, 'same': auto.text == r.text}))\n"
    )
    contract = tmp_path / "contract_en.txt"  # a copy: nothing of the repo is read
    contract.write_bytes((ROOT / "examples" / "contract_en.txt").read_bytes())
    # the dependencies come from this environment; catp itself only from the wheel (PYTHONPATH comes first)
    done = subprocess.run([sys.executable, "-c", script, str(contract)],
                          capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(target)})
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["module"].startswith(str(target))
    assert got["rules"] == str(target / "catp" / "_rules")
    assert 0 < got["out"] <= got["in"] // 6 + 1 and got["kept"] > 0
    assert any(reason.startswith("legal.") for reason in got["reasons"])  # the legal domain's own rules ran
    assert got["auto"] == "legal" and got["same"]
