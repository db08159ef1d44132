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
NET = "examples.cli_net"
BUGGY = "tests/data/cli_buggy.py"

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
    "bad_backend": LOSS + ["--emit", "fortran"],
    "dims_without_check": LOSS + ["--dims", "m=3"],
    "bad_dims": LOSS + ["--check", "--dims", "m=three"],
    "help": ["--help"],
    # derivatives other than the gradient
    "hessian_scalar": [f"{EXAMPLE}:scalar", "--hessian"],
    "hessian_emit": LOSS + ["--hessian", "--emit", "numpy"],
    "hessian_latex": [f"{EXAMPLE}:scalar", "--hessian", "--latex"],
    "hessian_program": LOSS + ["--hessian", "--wrt", "x", "--program"],
    "hessian_check": LOSS + ["--hessian", "--check", "--dims", "m=3,n=2"],
    "order1_check": LOSS + ["--order", "1", "--check"],
    "order2": [f"{EXAMPLE}:scalar", "--order", "2"],
    "order3_scalar": [f"{EXAMPLE}:scalar", "--order", "3"],
    "order3_emit": LOSS + ["--order", "3", "--wrt", "x", "b", "--emit", "numpy"],
    "order3_latex": [f"{EXAMPLE}:scalar", "--order", "3", "--wrt", "x", "--latex"],
    "jacobian": [f"{EXAMPLE}:vector_valued", "--shape", "W=m,n", "--shape", "x=n",
                 "--jacobian"],
    "jacobian_emit": [f"{EXAMPLE}:vector_valued", "--shape", "W=m,n", "--shape", "x=n",
                      "--jacobian", "--emit", "torch"],
    "function_loss_sum": [f"{EXAMPLE}:vector_valued", "--shape", "W=m,n", "--shape", "x=n",
                          "--loss", "sum", "--wrt", "x"],
    # module mode
    "module_mse": [f"{NET}:Net", "--shape", "x=B,3", "--loss", "mse"],
    "module_mse_emit": [f"{NET}:Net", "--shape", "x=B,3", "--loss", "mse", "--emit", "numpy"],
    "module_default_sum": [f"{NET}:Net", "--shape", "x=B,3", "--emit", "torch"],
    "module_ce_check": [f"{NET}:Classifier", "--shape", "x=B,4", "--loss", "cross_entropy",
                        "--check", "--dims", "B=5"],
    "module_ce_emit": [f"{NET}:Classifier", "--shape", "x=B,4", "--loss", "cross_entropy",
                       "--emit", "numpy"],
    "module_nll_check": [f"{NET}:Classifier", "--shape", "x=4", "--loss", "nll", "--check"],
    "module_l1_check": [f"{NET}:Net", "--shape", "x=B,3", "--loss", "l1", "--order", "1",
                        "--check"],
    "module_bce_check": [f"{NET}:make_probabilities", "--shape", "input=B,2", "--loss", "bce",
                         "--check"],
    "module_bce_logits": [f"{NET}:Net", "--shape", "x=3", "--loss", "bce_logits", "--latex"],
    "module_file": ["examples/cli_net.py:Net", "--shape", "x=B,3", "--loss", "mse"],
    "module_jacobian": [f"{NET}:Net", "--shape", "x=3", "--jacobian", "--wrt", "x"],
    "module_hessian": [f"{NET}:Net", "--shape", "x=B,3", "--loss", "mse", "--hessian",
                       "--wrt", "b_out"],
    "module_wrt_qualified": [f"{NET}:Net", "--shape", "x=B,3", "--loss", "mse", "--wrt",
                             "out.bias"],
    "module_target_shape": [f"{NET}:Classifier", "--shape", "x=B,4", "--shape",
                            "target=B:int", "--loss", "cross_entropy", "--program"],
    # errors of the new options
    "module_needs_shape": [f"{NET}:Net", "--loss", "mse"],
    "module_bad_shape": [f"{NET}:Net", "--shape", "x=B,4", "--loss", "mse"],
    "no_such_module": ["no_such_package.models:Net"],
    "no_such_name_in_module": [f"{NET}:Nope"],
    "target_loss_on_function": [f"{EXAMPLE}:scalar", "--loss", "mse"],
    "check_jacobian": [f"{EXAMPLE}:vector_valued", "--shape", "W=m,n", "--shape", "x=n",
                       "--jacobian", "--check"],
    "check_order3": [f"{EXAMPLE}:scalar", "--order", "3", "--check"],
    "bad_order": [f"{EXAMPLE}:scalar", "--order", "0"],
    "two_kinds": [f"{EXAMPLE}:scalar", "--hessian", "--jacobian"],
    "bad_dtype": [f"{EXAMPLE}:scalar", "--shape", "x=3:complex"],
    "bad_loss": [f"{NET}:Net", "--shape", "x=3", "--loss", "hinge"],
    "user_error": [f"{BUGGY}:f"],
    "user_error_traceback": [f"{BUGGY}:f", "--traceback"],
}
SUBPROCESS_CASES = ["formulas", "latex", "program", "emit_numpy", "emit_torch", "check",
                    "missing_file", "missing_function", "shape_no_equals", "non_scalar",
                    "module_ce_check", "user_error", "user_error_traceback"]


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
        assert f"\\frac{{\\partial \\mathit{{loss}}}}{{\\partial {name}}}" in out
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


def test_help_documents_every_flag_with_an_example(cli):
    code, out, err = cli("help")
    assert code == 0
    assert out.startswith("usage: symgrad ")
    from symgrad.cli import EXAMPLES, build_parser
    examples = EXAMPLES.split("\n")
    for action in build_parser()._actions:
        for flag in action.option_strings:
            if flag in ("-h", "--help"):
                continue
            assert flag in out, flag
            in_example = any(line.lstrip().startswith("symgrad ") and flag in line.split()
                             for line in examples)
            assert in_example or "e.g." in (action.help or ""), flag
    for line in examples:          # every example runs as written
        if line.startswith("  symgrad ") and "--version" not in line:
            argv = line.split()[1:]
            argv = argv[:argv.index(">")] if ">" in argv else argv
            assert main(argv) == 0, line


# ----- errors ----------------------------------------------------------------------------

@BOTH
def test_missing_file(cli, mode):
    line = usage_error(cli("missing_file"))
    assert "no such file" in line and "examples/no_such_file.py" in line


@BOTH
def test_missing_function(cli, mode):
    line = usage_error(cli("missing_function"))
    assert "has no function or module 'nope'" in line
    assert "loss" in line            # lists the functions the file does define


def test_target_without_function(cli):
    assert "FILE.py:NAME or package.module:NAME" in usage_error(cli("no_colon"))


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
    assert line.endswith("(here: --jacobian for the Jacobian, or --loss sum)")


@pytest.mark.parametrize("case, words", [
    ("two_modes", ["not allowed with"]),
    ("bad_backend", ["--emit", "invalid choice: 'fortran'"]),
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
    assert "mod.py:f is not a function or an nn.Module (got int)" in capsys.readouterr().err


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


def test_console_script_installed():
    exe = shutil.which("symgrad")
    if exe is None:
        pytest.skip("the symgrad console script is not on PATH (pip install -e .)")
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("usage: symgrad ")


def test_version_needs_no_target(capsys):
    assert main(["--version"]) in (0, None)
    assert capsys.readouterr().out.strip() == f"symgrad {sg.__version__}"


# ----- Jacobians, Hessians and higher orders ---------------------------------------------

def run_source(src, name):
    """The function ``name`` defined by emitted source (which must not use symgrad)."""
    assert "symgrad" not in src
    namespace = {}
    exec(compile(src, f"<emitted {name}>", "exec"), namespace)
    return namespace[name]


def torch_loss(W, x, b):
    return torch.tanh(W @ x + b).sum()


def test_hessian_of_scalars(cli):
    out = ok(cli("hessian_scalar"))
    assert out == ("d²scalar/dx² = -y*sin(x) + 2\nd²scalar/dxdy = cos(x)\n"
                   "d²scalar/dydx = cos(x)\nd²scalar/dy² = 0\n")


def test_order_2_is_the_hessian(cli):
    assert ok(cli("order2")) == ok(cli("hessian_scalar"))


def test_hessian_emit_matches_torch(cli):
    fn = run_source(ok(cli("hessian_emit")), "hessian_loss")
    args = random_inputs(3, 2, seed=4)
    ours = fn(*args)
    ref = torch.func.hessian(torch_loss, argnums=(0, 1, 2))(*[torch.tensor(a) for a in args])
    flat = [b for row in ours for b in row] if len(ours) == 3 else list(ours)
    assert len(flat) == 9      # blocks d²/dW², d²/dWdx, ... in row order
    for k, block in enumerate(flat):
        np.testing.assert_allclose(block, ref[k // 3][k % 3].numpy(), rtol=1e-11, atol=1e-13)


def test_hessian_latex_and_program(cli):
    tex = ok(cli("hessian_latex"))
    assert r"\frac{\partial^2 \mathit{scalar}}{\partial x^2} &= - y \sin{\left(x \right)} + 2" in tex
    assert r"\frac{\partial^2 \mathit{scalar}}{\partial x \partial y} &= \cos{\left(x \right)}" in tex
    lines = ok(cli("hessian_program")).splitlines()
    assert lines[0] == "# inputs: W(m, n), x(n,), b(m,)"
    assert any(line.startswith("d²loss/dx² = ") for line in lines)


def test_hessian_check(cli):
    out = ok(cli("hessian_check"))
    assert "orders 1 and 2" in out and "H·v d/dx [numpy]" in out


def test_order_1_check_compares_first_derivatives_only(cli):
    out = ok(cli("order1_check"))
    assert "match torch.autograd" in out and "H·v" not in out


def test_third_derivative_of_scalars(cli):
    out = ok(cli("order3_scalar"))
    assert out == ("d³scalar/dx³ = -y*cos(x)\nd³scalar/dx²dy = -sin(x)\n"
                   "d³scalar/dxdy² = 0\nd³scalar/dy³ = 0\n")
    tex = ok(cli("order3_latex"))
    assert r"\frac{\partial^{3} \mathit{scalar}}{\partial x^{3}} &= - y \cos{\left(x \right)}" in tex


def test_third_derivative_emit_matches_torch(cli):
    """Blocks d³/dx³, d³/dx²db, d³/dxdb², d³/db³ against torch.func's nested jacobians."""
    fn = run_source(ok(cli("order3_emit")), "d3_loss")
    W, x, b = random_inputs(3, 2, seed=7)
    ours = fn(W, x, b)
    Wt = torch.tensor(W)
    third = torch.func.jacfwd(torch.func.hessian(lambda x, b: torch_loss(Wt, x, b),
                                                 argnums=(0, 1)), argnums=(0, 1))
    ref = third(torch.tensor(x), torch.tensor(b))
    expected = [ref[0][0][0], ref[0][0][1], ref[0][1][1], ref[1][1][1]]
    assert len(ours) == 4
    for o, r in zip(ours, expected):
        assert o.shape == tuple(r.shape)
        np.testing.assert_allclose(o, r.numpy(), rtol=1e-10, atol=1e-12)


def test_jacobian(cli):
    out = ok(cli("jacobian"))
    assert out.startswith("dvector_valued/dW = ") and "[shape (m, m, n)]" in out
    assert "dvector_valued/dx = " in out and "[shape (m, n)]" in out
    fn = run_source(ok(cli("jacobian_emit")), "jacobian_vector_valued")
    W, x, _ = random_inputs(4, 3, seed=2)
    Wt, xt = torch.tensor(W), torch.tensor(x)
    ours = fn(Wt, xt)
    ref = torch.func.jacrev(lambda W, x: torch.tanh(W @ x), argnums=(0, 1))(Wt, xt)
    for o, r in zip(ours, ref):
        torch.testing.assert_close(o, r, rtol=1e-12, atol=1e-14)


def test_function_with_sum_loss(cli):
    out = ok(cli("function_loss_sum"))
    assert out.startswith("dL/dx = ") and "[shape (n,)]" in out


# ----- module mode -----------------------------------------------------------------------

def net_and_args(name, batch=4, seed=0):
    """The example module built as the CLI builds it, and random inputs."""
    import importlib
    torch.manual_seed(0)
    module = getattr(importlib.import_module(NET), name)().double()
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, module.hidden.in_features if name == "Net" else 4))
    return module, x


def module_reference(module, x, target, loss):
    params = [p for p in module.parameters()]
    out = loss(module(torch.tensor(x)), torch.as_tensor(target))
    return [g.numpy() for g in torch.autograd.grad(out, params)]


def test_module_mse_emit_matches_torch(cli):
    fn = run_source(ok(cli("module_mse_emit")), "grad_L")
    module, x = net_and_args("Net")
    target = np.random.default_rng(1).standard_normal((4, 2))
    params = [p.detach().numpy() for p in module.parameters()]
    ours = fn(*params, x, target)
    ref = module_reference(module, x, target, torch.nn.functional.mse_loss)
    assert len(ours) == 4
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-14)


def test_module_mse_formulas(cli):
    out = ok(cli("module_mse"))
    lines = out.splitlines()
    assert [line.split(" = ")[0] for line in lines[:4]] == [
        "dL/dW_hidden", "dL/db_hidden", "dL/dW_out", "dL/db_out"]
    assert "[shape (4, 3)]" in lines[0] and "[shape (2,)]" in lines[3]
    assert "tanh(x W_hiddenᵀ + 𝟙 b_hiddenᵀ)" in out and "(1/B)" in out and "target" in out
    assert ok(cli("module_file")) == out     # FILE.py:Class is the same module


def test_module_default_loss_is_the_sum(cli):
    fn = run_source(ok(cli("module_default_sum")), "grad_L")
    module, x = net_and_args("Net", batch=3)
    params = [p.detach() for p in module.parameters()]
    ours = fn(*params, torch.tensor(x))
    ref = module_reference(module, x, 0.0, lambda out, t: out.sum())
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o.numpy(), r, rtol=1e-12, atol=1e-14)


@BOTH
def test_module_cross_entropy_check(cli, mode):
    out = ok(cli("module_ce_check"))
    assert "sg.check(L): gradients w.r.t. W_layers_0, b_layers_0, W_layers_2, b_layers_2 " \
           "match torch.autograd" in out
    assert "dims {'B': 5}" in out


def test_module_cross_entropy_emit_takes_integer_labels(cli):
    fn = run_source(ok(cli("module_ce_emit")), "grad_L")
    module, x = net_and_args("Classifier", batch=5)
    labels = np.array([0, 2, 1, 1, 0])
    params = [p.detach().numpy() for p in module.parameters()]
    ours = fn(*params, x, labels)
    ref = module_reference(module, x, labels, torch.nn.functional.cross_entropy)
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", ["module_nll_check", "module_l1_check", "module_bce_check"])
def test_module_losses_check(cli, case):
    out = ok(cli(case))
    assert "match torch.autograd" in out
    assert ("orders 1 and 2" in out) == (case != "module_l1_check")


def test_module_bce_logits_latex(cli):
    assert ok(cli("module_bce_logits")).startswith("\\begin{aligned}")


def test_module_jacobian_wrt_input(cli):
    out = ok(cli("module_jacobian"))
    assert out == ("dNet/dx = W_out diag(𝟙 − tanh(W_hidden x + b_hidden)∘²) W_hidden    "
                   "[shape (2, 3)]\n")


def test_module_hessian_and_qualified_wrt(cli):
    out = ok(cli("module_hessian"))
    assert out.startswith("d²L/db_out² = ") and "[shape (2, 2)]" in out
    out = ok(cli("module_wrt_qualified"))
    assert out.startswith("dL/db_out = ") and len(out.splitlines()) == 1


def test_module_target_shape_given(cli):
    lines = ok(cli("module_target_shape")).splitlines()
    assert lines[0] == ("# inputs: W_layers_0(5, 4), b_layers_0(5,), W_layers_2(3, 5), "
                        "b_layers_2(3,), x(B, 4), target(B,)")


def test_module_class_needing_arguments(tmp_path, capsys):
    mod = tmp_path / "needs.py"
    mod.write_text("import torch\nclass Lin(torch.nn.Linear):\n    pass\n"
                   "def make():\n    return 3\n")
    assert main([f"{mod}:Lin", "--shape", "input=3"]) == 2
    err = capsys.readouterr().err
    assert "Lin() needs arguments (in_features, out_features)" in err and "def make()" in err
    assert main([f"{mod}:make"]) == 2
    assert "returns a int, not an nn.Module" in capsys.readouterr().err


def test_module_instance(tmp_path, capsys):
    mod = tmp_path / "inst.py"
    mod.write_text("import torch\nmodel = torch.nn.Linear(2, 1)\n")
    assert main([f"{mod}:model", "--shape", "input=2", "--wrt", "input"]) == 0
    assert capsys.readouterr().out.startswith("dL/dinput = ")


@pytest.mark.parametrize("case, words", [
    ("module_needs_shape", ["Net.forward needs the shape of x", "--shape x="]),
    ("module_bad_shape", ["matmul", "(B, 4)", "(3, 4)"]),
    ("no_such_module", ["no module named 'no_such_package'"]),
    ("no_such_name_in_module", ["has no function or module 'Nope'", "Classifier, Net"]),
    ("target_loss_on_function", ["--loss mse is for nn.Module targets"]),
    ("check_jacobian", ["--check", "does not apply to --jacobian"]),
    ("check_order3", ["not --order 3", "--order 1 or 2"]),
    ("bad_order", ["--order", "positive integer"]),
    ("two_kinds", ["not allowed with"]),
    ("bad_dtype", ["dtype 'complex'"]),
    ("bad_loss", ["--loss", "invalid choice: 'hinge'"]),
])
def test_new_option_errors(cli, case, words):
    line = usage_error(cli(case))
    for w in words:
        assert w in line


@BOTH
def test_user_code_error_is_one_line(cli, mode):
    line = usage_error(cli("user_error"))
    assert line == ("symgrad: error: NameError: name 'undefined_name' is not defined "
                    f"(at {BUGGY}:5 in f); --traceback shows the full traceback")


@BOTH
def test_traceback_flag_shows_the_traceback(cli, mode):
    if mode == "in_process":
        with pytest.raises(NameError):
            cli("user_error_traceback")
        return
    code, out, err = cli("user_error_traceback")
    assert code == 1 and "Traceback (most recent call last)" in err
    assert err.strip().endswith("NameError: name 'undefined_name' is not defined")


def test_traceback_flag_on_a_symgrad_error():
    with pytest.raises(sg.NonScalarOutputError):
        main(list(CASES["non_scalar"]) + ["--traceback"])


def test_error_in_imported_module(tmp_path, capsys, monkeypatch):
    (tmp_path / "boom.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["boom:f"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("symgrad: error: RuntimeError: boom at import (at boom.py:1 in <module>); "
                   "--traceback shows the full traceback")


def test_module_parameter_shapes_by_qualified_name(tmp_path, capsys):
    """A module's parameter given symbolic dims on the command line by its qualified
    name (``0.weight``), differentiated w.r.t. another by qualified name."""
    mod = tmp_path / "seq.py"
    mod.write_text("import torch\ndef make():\n    return torch.nn.Sequential(torch.nn.Linear("
                   "3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))\n")
    assert main([f"{mod}:make", "--shape", "input=3", "--shape", "0.weight=h,3", "--shape",
                 "0.bias=h", "--shape", "2.weight=1,h", "--wrt", "0.bias"]) == 0
    assert capsys.readouterr().out == (
        "dL/db0 = W2ᵀ ∘ (𝟙 − tanh(W0 input + b0)∘²)    [shape (h,)]\n")
