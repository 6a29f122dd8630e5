"""The wheel a user installs (`pip install catp`, not the editable checkout the suite runs from) carries every
package, the built-in rule sets and the segmentation patterns, and prunes from a plain install. It does not carry
evals/: `catp eval` runs from a checkout, and says so elsewhere."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

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
            for init in (ROOT / "catp").rglob("__init__.py")}


def test_wheel_carries_every_package_and_the_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packaged = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert _source_packages() <= packaged, "a package is missing from [tool.setuptools] packages in pyproject.toml"
    assert not [n for n in names if n.split("/")[0] == "evals"], "evals/ is the repository's, not the wheel's"
    assert {n.split("/")[0] for n in names if n.endswith(".py")} == {"catp"}  # no other top-level package
    for rule_file in (ROOT / "rules").glob("*.yaml"):
        assert f"catp/_rules/{rule_file.name}" in names
    assert not [n for n in names if n.startswith("catp/_rules/") and not n.endswith(".yaml")]  # build tools stay out
    assert "catp/segment/segmentation.yaml" in names
    assert "catp/py.typed" in names
    assert {"catp/models/keep/keep.json", "catp/models/keep/keep.npz"} <= names  # the keep-model ships
    assert any(n.endswith("licenses/LICENSE") for n in names)


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    return target


def test_installed_wheel_prunes_with_its_own_rules(installed, tmp_path):
    """Pruned from the wheel in a folder where the repo's rules/ cannot be reached: the domain's rules (named, and
    detected by --domain auto from the packaged files' keywords) come from catp/_rules, even with a decoy rules/
    folder beside the installed package (where a lookup outside the package, `parents[2]`, would find it)."""
    target = installed
    (target / "rules").mkdir(exist_ok=True)
    (target / "rules" / "common.yaml").write_text("name: decoy\nrules: [not, a, rule]\n", encoding="utf-8")
    script = (
        "import catp, json, sys\n"
        "from catp.rules.loader import builtin_rules_dir\n"
        "text = open(sys.argv[1], encoding='utf-8').read()\n"
        "r = catp.prune(text, domain='legal', ratio=1/6)\n"
        "auto = catp.prune(text, ratio=1/6)\n"
        "k = catp.Pruner(domain='legal', scorer='keep').prune(text, ratio=1/6)\n"
        "print(json.dumps({'module': catp.__file__, 'rules': str(builtin_rules_dir()),\n"
        "                  'out': r.stats.output_tokens, 'in': r.stats.input_tokens, 'kept': len(r.kept),\n"
        "                  'reasons': sorted({x for s in r.kept for x in s.reasons}),\n"
        "                  'auto': auto.stats.domain, 'same': auto.text == r.text,\n"
        "                  'keep': k.kept[0].reasons[0], 'keep_out': k.stats.output_tokens}))\n"
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
    assert got["keep"].startswith("keep-model p=") and 0 < got["keep_out"] <= got["in"] // 6 + 1  # from the wheel


def installed_catp(target: Path, tmp_path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`catp ARGS` from the installed wheel, run in `cwd` (a script file: python puts its folder, not `cwd`, first
    on sys.path, so a checkout's catp/ in `cwd` is not imported)."""
    script = tmp_path / "run_catp.py"
    script.write_text("import sys\nimport catp\nfrom catp.cli import main\nprint('catp from', catp.__file__, file=sys.stderr)\n"
                      "sys.exit(main(sys.argv[1:]))\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(target)})
    assert f"catp from {target}" in done.stderr, done.stderr[-2000:]
    return done


def test_catp_eval_from_a_wheel_outside_a_checkout_says_to_run_it_from_one(installed, tmp_path):
    done = installed_catp(installed, tmp_path, tmp_path, "eval", "--data", "x.jsonl")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("catp: error:")]
    assert "catp eval runs from a catp checkout" in error and "evals/" in error
    help_text = installed_catp(installed, tmp_path, tmp_path, "--help")
    assert help_text.returncode == 0 and "eval" in help_text.stdout  # still listed


def test_catp_eval_from_a_wheel_runs_in_a_checkouts_root(installed, tmp_path):
    done = installed_catp(installed, tmp_path, ROOT, "eval", "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "catp eval" in done.stdout and "--question-aware" in done.stdout and "--rule-report" in done.stdout
    bad = installed_catp(installed, tmp_path, ROOT, "eval")  # the real command's own check: no data given
    assert bad.returncode == 2 and "give at least one data file or folder" in bad.stderr, bad.stderr[-2000:]
