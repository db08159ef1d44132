"""The type hints hold for a user's code: mypy (configured in pyproject.toml) sees every
public name of ``symgrad`` with a real type, never ``Any``, accepts ordinary use and
flags a wrong call. CI also runs ``python -m mypy`` on the public modules."""
import subprocess
import sys
from pathlib import Path

import pytest

import symgrad

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parent.parent

USER_CODE = '''
import numpy as np
import symgrad as sg

def loss(W, x):
    return sg.sum(sg.tanh(W @ x))

g = sg.grad_fn(loss, shapes={"W": ("m", "n"), "x": ("n",)})
text: str = g.text()
dW, dx = g.compile("numpy")(np.ones((2, 3)), np.ones(3))
y: sg.Tensor = sg.symbol("y", shape=("n",)) * 2
report: sg.CheckReport = sg.check(lambda a: sg.sin(a) * a, trials=1)
'''


def _mypy(tmp_path, source):
    path = tmp_path / "user_code.py"
    path.write_text(source)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--no-error-summary", "--hide-error-context", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def test_user_code_type_checks(tmp_path):
    code, out = _mypy(tmp_path, USER_CODE)
    assert code == 0, out


def test_a_wrong_call_is_flagged(tmp_path):
    code, out = _mypy(tmp_path, USER_CODE + '\nsg.grad_fn(loss, shapes=3)\n')
    assert code == 1 and 'Argument "shapes" to "grad_fn"' in out, out


def test_every_public_name_has_a_type(tmp_path):
    lines = ["import symgrad as sg"] + [f"reveal_type(sg.{n})" for n in symgrad.__all__]
    code, out = _mypy(tmp_path, "\n".join(lines) + "\n")
    untyped = [symgrad.__all__[int(line.split(":")[1]) - 2] for line in out.splitlines()
               if 'Revealed type is "Any"' in line]
    assert "Revealed type" in out, out
    assert not untyped, f"mypy sees these public names as Any: {untyped}"
