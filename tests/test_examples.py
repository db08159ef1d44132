"""Every script in examples/ runs to completion and verifies itself against torch, and
every view of every derivative it builds agrees with the compiled code.

Examples print formulas and compare symgrad's compiled gradients with torch.autograd;
each exits non-zero on a mismatch. Each runs under ``tests/example_views.py``, which then
evaluates the printed views (formulas, NumPy text, program, explicit) of each gradient,
Jacobian and Hessian object the script made against its compiled NumPy code. A new example
is picked up by the glob.
"""
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
DRIVER = Path(__file__).resolve().parent / "example_views.py"


def test_there_are_examples():
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_example_runs_and_verifies(script):
    run = subprocess.run([sys.executable, str(DRIVER), str(script)], cwd=EXAMPLES,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{script.name} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert run.stdout.strip(), f"{script.name} printed nothing"
    assert "derivative objects" in run.stdout and "MISMATCH" not in run.stdout
