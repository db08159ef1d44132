"""The ``symgrad`` command line, run two ways: ``python -m symgrad`` in a subprocess and
``symgrad.cli.main([...])`` in this process.

Every case runs in process; the cases in ``SUBPROCESS_CASES`` also run as
``python -m symgrad`` (tests marked ``BOTH`` get a ``mode`` parameter). A subprocess
spends about 3 s importing torch, so they all run once, one per CPU in parallel, the first
time one is needed.
"""
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/mlp_cli.py"
SHAPES = ["--shape", "W=m,n", "--shape", "x=n", "--shape", "b=m"]
LOSS = [f"{EXAMPLE}:loss"] + SHAPES

CASES = {
    "formulas": LOSS,
    "latex": LOSS + ["--latex"],
    "program": LOSS + ["--program"],
    "emit_numpy": LOSS + ["--emit", "numpy"],
    "emit_torch": LOSS + ["--emit", "torch"],
    "check": LOSS + ["--check", "--dims", "m=3,n=2"],
    "wrt": LOSS + ["--wrt", "b", "W"],
    "scalar": [f"{EXAMPLE}:scalar", "--shape", "x=", "--shape", "y="],
    "annotated": [f"{EXAMPLE}:annotated"],
    "missing_file": ["examples/no_such_file.py:loss"] + SHAPES,
    "missing_function": [f"{EXAMPLE}:nope"] + SHAPES,
    "no_colon": [EXAMPLE] + SHAPES,
    "shape_no_equals": [f"{EXAMPLE}:loss", "--shape", "W"],
    "shape_bad_dim": [f"{EXAMPLE}:loss", "--shape", "W=m,2x"],
    "shape_bad_name": [f"{EXAMPLE}:loss", "--shape", "1W=m,n"],
    "shape_twice": LOSS + ["--shape", "W=3,3"],
    "unknown_param": [f"{EXAMPLE}:loss", "--shape", "Q=3"],
    "bad_wrt": LOSS + ["--wrt", "Z"],
    "shape_mismatch": [f"{EXAMPLE}:loss", "--shape", "W=m,n", "--shape", "x=k",
                       "--shape", "b=m"],
    "non_scalar": [f"{EXAMPLE}:vector_valued", "--shape", "W=m,n", "--shape", "x=n"],
    "two_modes": LOSS + ["--latex", "--program"],
    "bad_backend": LOSS + ["--emit", "jax"],
    "dims_without_check": LOSS + ["--dims", "m=3"],
    "bad_dims": LOSS + ["--check", "--dims", "m=three"],
    "help": ["--help"],
}
SUBPROCESS_CASES = ["formulas", "latex", "program", "emit_numpy", "emit_torch", "check",
                    "missing_file", "missing_function", "shape_no_equals", "non_scalar"]


@pytest.fixture(scope="module")
def subprocess_results():
    """{case: (returncode, stdout, stderr)} of ``python -m symgrad`` for the
    SUBPROCESS_CASES, run in parallel on first use."""
    def run(name):
        r = subprocess.run([sys.executable, "-m", "symgrad", *CASES[name]], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        return r.returncode, r.stdout, r.stderr

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(SUBPROCESS_CASES, pool.map(run, SUBPROCESS_CASES)))


BOTH = pytest.mark.parametrize("mode", ["subprocess", "in_process"])


def modes(*cases):
    """(mode, case, ...) parameters: in process always, by subprocess when it is one
    of the SUBPROCESS_CASES."""
    return [pytest.param(mode, *c, id=f"{c[0]}-{mode}")
            for c in cases for mode in ("subprocess", "in_process")
            if mode == "in_process" or c[0] in SUBPROCESS_CASES]


@pytest.fixture
def cli(request, capsys, monkeypatch):
    """cli(case) -> (exit status, stdout, stderr), by subprocess if the test's ``mode``
    parameter says so, else by calling main() in this process."""
    callspec = getattr(request.node, "callspec", None)
    mode = callspec.params.get("mode", "in_process") if callspec else "in_process"

    def call(case):
        if mode == "subprocess":
            return request.getfixturevalue("subprocess_results")[case]
        monkeypatch.chdir(ROOT)
        capsys.readouterr()
        code = main(list(CASES[case]))
        out, err = capsys.readouterr()
        return code, out, err
    return call


def loss(W, x, b):
    return sg.sum(sg.tanh(W @ x + b))


def loss_grad_fn():
    return sg.grad_fn(loss, shapes={"W": ("m", "n"), "x": ("n",), "b": ("m",)})


def torch_reference(W, x, b):
    """torch.autograd's gradient of the example's loss (sg ops compute on torch)."""
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (W, x, b)]
    return [g.numpy() for g in torch.autograd.grad(loss(*ts), ts)]


def random_inputs(m, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, n)), rng.standard_normal(n), rng.standard_normal(m)


def ok(result):
    code, out, err = result
    assert code == 0, err
    assert "Traceback" not in err
    return out


def usage_error(result):
    """The one-line ``symgrad: error: ...`` message of a failed run (exit status 2)."""
    code, out, err = result
    assert code == 2, (out, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("symgrad: error: ")
    return lines[0]


# ----- outputs ---------------------------------------------------------------------------

@BOTH
def test_formulas(cli, mode):
    out = ok(cli("formulas"))
    assert out == str(loss_grad_fn()) + "\n"
    lines = out.splitlines()
    assert lines[0].startswith("dloss/dW = ") and lines[0].endswith("[shape (m, n)]")
    assert lines[1].startswith("dloss/dx = ") and lines[1].endswith("[shape (n,)]")
    assert lines[2].startswith("dloss/db = ") and lines[2].endswith("[shape (m,)]")
    assert "tanh" in out


@BOTH
def test_latex(cli, mode):
    out = ok(cli("latex"))
    assert out == loss_grad_fn().latex() + "\n"
    assert out.startswith("\\begin{aligned}")
    for name in "Wxb":
        assert f"\\frac{{\\partial loss}}{{\\partial {name}}}" in out
    assert "\\tanh" in out


@BOTH
def test_program(cli, mode):
    out = ok(cli("program"))
    assert out == loss_grad_fn().program() + "\n"
    lines = out.splitlines()
    assert lines[0] == "# inputs: W(m, n), x(n,), b(m,)"
    assert any(line.startswith("loss = ") for line in lines)
    for name in "Wxb":
        assert any(line.startswith(f"dloss/d{name} = ") for line in lines)


@BOTH
def test_emit_numpy_runs_standalone(cli, mode):
    src = ok(cli("emit_numpy"))
    assert "symgrad" not in src
    namespace = {}
    exec(compile(src, "<emitted numpy>", "exec"), namespace)
    grad_loss = namespace["grad_loss"]
    for m, n in [(3, 2), (1, 5)]:
        args = random_inputs(m, n, seed=m)
        ours = grad_loss(*args)
        assert len(ours) == 3
        for o, r, a in zip(ours, torch_reference(*args), args):
            assert isinstance(o, np.ndarray) and o.shape == a.shape
            np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-14)


@BOTH
def test_emit_torch_runs_standalone(cli, mode):
    src = ok(cli("emit_torch"))
    assert "symgrad" not in src and "import torch" in src
    namespace = {}
    exec(compile(src, "<emitted torch>", "exec"), namespace)
    args = random_inputs(4, 3)
    ours = namespace["grad_loss"](*[torch.tensor(a) for a in args])
    for o, r in zip(ours, torch_reference(*args)):
        assert isinstance(o, torch.Tensor) and o.dtype == torch.float64
        np.testing.assert_allclose(o.numpy(), r, rtol=1e-12, atol=1e-14)


@BOTH
def test_check(cli, mode):
    out = ok(cli("check"))
    assert "sg.check(loss)" in out and "match torch.autograd" in out
    assert "orders 1 and 2" in out
    assert "dims {'m': 3, 'n': 2}" in out
    for name in "Wxb":
        assert f"d/d{name} [numpy]" in out and f"d/d{name} [torch]" in out


def test_wrt_order(cli):
    lines = ok(cli("wrt")).splitlines()
    assert lines[0].startswith("dloss/db = ")
    assert lines[1].startswith("dloss/dW = ")
    assert not any(line.startswith("dloss/dx") for line in lines)


def test_scalar_shapes(cli):
    out = ok(cli("scalar"))
    assert out == "dscalar/dx = 2*x + y*cos(x)\ndscalar/dy = sin(x)\n"


def test_annotations_give_shapes(cli):
    out = ok(cli("annotated"))
    assert "dannotated/dW = " in out and "[shape (m, n)]" in out
    assert "dannotated/dx = " in out and "[shape (n,)]" in out


def test_help(cli):
    code, out, err = cli("help")
    assert code == 0
    assert out.startswith("usage: symgrad ")
    for flag in ("--shape", "--wrt", "--latex", "--program", "--emit", "--check", "--dims"):
        assert flag in out


# ----- errors ----------------------------------------------------------------------------

@BOTH
def test_missing_file(cli, mode):
    line = usage_error(cli("missing_file"))
    assert "no such file" in line and "examples/no_such_file.py" in line


@BOTH
def test_missing_function(cli, mode):
    line = usage_error(cli("missing_function"))
    assert "has no function 'nope'" in line
    assert "loss" in line            # lists the functions the file does define


def test_target_without_function(cli):
    assert "FILE:FUNC" in usage_error(cli("no_colon"))


@pytest.mark.parametrize("mode, case, words", modes(
    ("shape_no_equals", ["--shape", "invalid shape 'W'", "NAME=d1,d2"]),
    ("shape_bad_dim", ["--shape", "'2x'", "integer nor a name"]),
    ("shape_bad_name", ["--shape", "invalid shape '1W=m,n'"]),
    ("shape_twice", ["--shape given twice for W"]),
    ("unknown_param", ["Q", "not parameters of loss(W, x, b)"]),
    ("bad_wrt", ["'Z'", "not a parameter of loss"]),
))
def test_bad_shape_and_wrt_specs(cli, mode, case, words):
    line = usage_error(cli(case))
    for w in words:
        assert w in line


def test_tracing_shape_error_is_one_line(cli):
    line = usage_error(cli("shape_mismatch"))
    assert "matmul" in line and "(m, n)" in line and "(k,)" in line


@BOTH
def test_non_scalar_output_points_to_vjp(cli, mode):
    line = usage_error(cli("non_scalar"))
    assert "scalar" in line and "(m,)" in line and "sg.vjp" in line


@pytest.mark.parametrize("case, words", [
    ("two_modes", ["not allowed with"]),
    ("bad_backend", ["--emit", "invalid choice: 'jax'"]),
    ("dims_without_check", ["--dims is only used with --check"]),
    ("bad_dims", ["--dims", "m=three"]),
])
def test_option_errors(cli, case, words):
    line = usage_error(cli(case))
    for w in words:
        assert w in line


# ----- in-process only -------------------------------------------------------------------

def test_syntax_error_in_file(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    return x +\n")
    assert main([f"{bad}:f"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symgrad: error: ") and f"{bad}:2: syntax error" in err


def test_not_a_function(tmp_path, capsys):
    mod = tmp_path / "mod.py"
    mod.write_text("f = 3\n")
    assert main([f"{mod}:f"]) == 2
    assert "mod.py:f is not a function (got int)" in capsys.readouterr().err


def test_file_can_import_its_neighbours(tmp_path, capsys):
    (tmp_path / "helpers.py").write_text("import symgrad as sg\n"
                                         "def act(x):\n    return sg.tanh(x)\n")
    (tmp_path / "model.py").write_text("import symgrad as sg\nfrom helpers import act\n"
                                       "def f(x):\n    return sg.sum(act(x))\n")
    assert main([f"{tmp_path / 'model.py'}:f", "--shape", "x=3"]) == 0
    assert "df/dx = " in capsys.readouterr().out


def test_main_block_of_the_file_does_not_run(tmp_path, capsys):
    mod = tmp_path / "mod.py"
    mod.write_text("def f(x):\n    return x * x\n"
                   "if __name__ == '__main__':\n    raise SystemExit('ran main')\n")
    assert main([f"{mod}:f"]) == 0
    assert capsys.readouterr().out == "df/dx = 2*x\n"


def test_check_failure_exits_1(tmp_path, capsys):
    """A function whose torch run disagrees with its traced graph fails the check."""
    mod = tmp_path / "liar.py"
    mod.write_text("import torch\n"
                   "def f(x):\n"
                   "    return x * x * x if isinstance(x, torch.Tensor) else x * x\n")
    assert main([f"{mod}:f", "--check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("symgrad: check failed: ") and "disagree" in err


def test_user_bug_keeps_its_traceback(tmp_path):
    """An ordinary exception in the user's own function is theirs to debug: not hidden."""
    mod = tmp_path / "buggy.py"
    mod.write_text("def f(x):\n    return undefined_name * x\n")
    with pytest.raises(NameError):
        main([f"{mod}:f"])


def test_console_script_installed():
    exe = shutil.which("symgrad")
    if exe is None:
        pytest.skip("the symgrad console script is not on PATH (pip install -e .)")
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("usage: symgrad ")


def test_version_needs_no_target(capsys):
    assert main(["--version"]) in (0, None)
    assert capsys.readouterr().out.strip() == f"symgrad {sg.__version__}"
