"""Symmetric inputs, ``sg.TensorSpec(("n", "n"), symmetric=True)``: the gradient is the
symmetric one, sym(G) = (G + Gᵀ)/2, which is what torch.autograd gives for f((X + Xᵀ)/2).

Every case is compared with torch.autograd in float64 on f((X + X.mT)/2) at a symmetric
X, at order 1 (the gradient) and order 2 (Hessian-vector products along symmetric
directions), for the NumPy and torch backends; the printed formulas are compared as text
and as SymPy objects, and evaluated (by SymPy alone, and by ``g.verify()``)."""
import inspect
import pickle

import numpy
import pytest
import sympy
from sympy import MatrixSymbol

import symgrad as sg
from symgrad.codegen import compile_function
from symgrad.core.shapes import dim_symbol
from symgrad.errors import ArgumentError, CheckError, ShapeError
from symgrad.views.verify import evaluate_formula

torch = pytest.importorskip("torch")

SYM = sg.TensorSpec(("n", "n"), symmetric=True)
BATCH = sg.TensorSpec(("b", "n", "n"), symmetric=True)
SIZES = {"n": 3, "b": 2}
N = dim_symbol("n")


def _sym(a):
    return (a + numpy.swapaxes(a, -1, -2)) / 2


def _spd(shape, rng):
    a = rng.standard_normal(shape)
    return a @ numpy.swapaxes(a, -1, -2) + shape[-1] * numpy.eye(shape[-1])


# name: (symgrad function, torch function, shapes, inputs to sample SPD, wrt)
CASES = {
    "trace_AX": (lambda X, A: sg.trace(A @ X),
                 lambda X, A: torch.trace(A @ X),
                 {"X": SYM, "A": ("n", "n")}, (), ("X", "A")),
    "logdet": (lambda X: sg.logdet(X),
               lambda X: torch.logdet(X),
               {"X": SYM}, ("X",), ("X",)),
    "xTXx": (lambda x, X: x @ X @ x,
             lambda x, X: x @ X @ x,
             {"x": ("n",), "X": SYM}, (), ("x", "X")),
    "quadratic_form": (lambda x, A: x @ A @ x,
                       lambda x, A: x @ A @ x,
                       {"x": ("n",), "A": SYM}, (), ("x", "A")),
    "gaussian": (lambda S, x, mu: -0.5 * sg.logdet(S) - 0.5 * (x - mu) @ sg.solve(S, x - mu),
                 lambda S, x, mu: -0.5 * torch.logdet(S)
                 - 0.5 * (x - mu) @ torch.linalg.solve(S, x - mu),
                 {"S": SYM, "x": ("n",), "mu": ("n",)}, ("S",), ("S", "x", "mu")),
    "nonlinear": (lambda X, A: sg.sum(sg.sin(X @ A @ X)) + sg.sum(X * X * A),
                  lambda X, A: torch.sin(X @ A @ X).sum() + (X * X * A).sum(),
                  {"X": SYM, "A": ("n", "n")}, (), ("X", "A")),
    "batch": (lambda X, A, v: sg.sum(sg.logdet(X)) + sg.sum(sg.tanh(A @ X @ v)),
              lambda X, A, v: torch.logdet(X).sum() + torch.tanh(A @ X @ v).sum(),
              {"X": BATCH, "A": ("n", "n"), "v": ("n",)}, ("X",), ("X", "A", "v")),
}


def _inputs(shapes, spd, rng):
    values = {}
    for name, spec in shapes.items():
        shape = tuple(SIZES[str(d)] if not isinstance(d, int) else d for d in spec)
        a = _spd(shape, rng) if name in spd else rng.standard_normal(shape)
        values[name] = _sym(a) if getattr(spec, "symmetric", False) else a
    return values


def _torch_derivatives(ft, shapes, values, wrt, directions):
    """torch.autograd's gradient and Hessian-vector products of f((X + X.mT)/2)."""
    leaves = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k in wrt)
              for k, v in values.items()}
    args = [(t + t.mT) / 2 if getattr(shapes[k], "symmetric", False) else t
            for k, t in leaves.items()]
    out = ft(*args)
    grads = torch.autograd.grad(out, [leaves[k] for k in wrt], create_graph=True)
    inner = sum((g * torch.tensor(directions[k])).sum() for g, k in zip(grads, wrt))
    hv = torch.autograd.grad(inner, [leaves[k] for k in wrt])
    return [g.detach().numpy() for g in grads], [h.numpy() for h in hv]


def _hvp_function(f, names, wrt):
    """h(*inputs, *directions) = Σ ⟨∂f/∂w, V_w⟩, traced: its gradient is the Hessian
    applied to the directions (reverse over reverse, through sg.grad)."""
    def h(*args):
        inputs, directions = args[:len(names)], args[len(names):]
        xs = [inputs[names.index(w)] for w in wrt]
        grads = sg.grad(f(*inputs), xs)
        return sum(sg.sum(g * v) for g, v in zip(grads, directions))
    params = names + [f"V_{w}" for w in wrt]
    h.__signature__ = inspect.Signature(   # one named parameter per input, as grad_fn reads
        [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in params])
    return h


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_against_torch_on_the_symmetrised_function(case, backend):
    f, ft, shapes, spd, wrt = CASES[case]
    rng = numpy.random.default_rng(7)
    names = list(shapes)
    g = sg.grad_fn(f, wrt=wrt, shapes=shapes)
    hvp_shapes = dict(shapes, **{f"V_{w}": shapes[w] for w in wrt})
    hv = sg.grad_fn(_hvp_function(f, names, wrt), wrt=wrt, shapes=hvp_shapes)
    for _ in range(2):
        values = _inputs(shapes, spd, rng)
        directions = _inputs({w: shapes[w] for w in wrt}, (), rng)
        ref_g, ref_hv = _torch_derivatives(ft, shapes, values, wrt, directions)
        convert = (lambda a: torch.tensor(a, dtype=torch.float64)) if backend == "torch" \
            else (lambda a: a)
        args = [convert(values[k]) for k in names]
        ours = g.compile(backend)(*args)
        ours_hv = hv.compile(backend)(*args, *[convert(directions[w]) for w in wrt])
        for o, r, o2, r2 in zip(ours, ref_g, ours_hv, ref_hv):
            o = o.numpy() if backend == "torch" else o
            o2 = o2.numpy() if backend == "torch" else o2
            numpy.testing.assert_allclose(o, r, rtol=1e-9, atol=1e-11)
            numpy.testing.assert_allclose(o2, r2, rtol=1e-9, atol=1e-11)
    assert g.verify().ok and hv.verify(n=2).ok   # explicit forms grow fast with n


def test_the_unsymmetrised_torch_gradient_differs():
    """The comparison above can fail: without the symmetrisation torch's gradient of
    tr(AX) is Aᵀ, not (A + Aᵀ)/2."""
    rng = numpy.random.default_rng(0)
    A, X = rng.standard_normal((3, 3)), _sym(rng.standard_normal((3, 3)))
    (ours,) = sg.grad_fn(lambda X, A: sg.trace(A @ X), wrt="X",
                         shapes={"X": SYM, "A": ("n", "n")}).compile()(X, A)
    Xt = torch.tensor(X, requires_grad=True)
    torch.trace(torch.tensor(A) @ Xt).backward()
    assert not numpy.allclose(ours, Xt.grad.numpy())
    numpy.testing.assert_allclose(ours, (A + A.T) / 2)


# ----- printed formulas ------------------------------------------------------------------------

def _matrices(**shapes):
    return {k: MatrixSymbol(k, *s) for k, s in shapes.items()}


FORMULAS = [
    # (function, shapes, wrt, text of the block, the textbook's SymPy form)
    (lambda X, A: sg.trace(A @ X), {"X": SYM, "A": ("n", "n")}, "X",
     ("(1/2) (A + Aᵀ)", "(A + Aᵀ)/2"), lambda m: (m["A"] + m["A"].T) / 2),
    (lambda X: sg.logdet(X), {"X": SYM}, "X", ("X⁻¹",), lambda m: m["X"].I),
    (lambda x, X: x @ X @ x, {"x": ("n",), "X": SYM}, "X", ("x xᵀ",),
     lambda m: m["x"] * m["x"].T),
    (lambda x, A: x @ A @ x, {"x": ("n",), "A": SYM}, "x", ("2 A x",),
     lambda m: 2 * m["A"] * m["x"]),
    (lambda P, r: (sg.logdet(P) - r @ P @ r) / 2, {"P": SYM, "r": ("n",)}, "P",
     ("(1/2) (P⁻¹ − r rᵀ)", "(P⁻¹ − r rᵀ)/2"), lambda m: (m["P"].I - m["r"] * m["r"].T) / 2),
]


@pytest.mark.parametrize("k", range(len(FORMULAS)))
def test_formulas_print_the_symmetric_result(k):
    f, shapes, wrt, texts, textbook = FORMULAS[k]
    g = sg.grad_fn(f, wrt=wrt, shapes=shapes)
    line = g.text().splitlines()[0]
    assert line.split(" = ", 1)[1].split("    [")[0] in texts, line
    matrices = _matrices(**{k: ((N, N) if len(s) == 2 else (N, 1)) for k, s in shapes.items()})
    formula = g.formulas[wrt]
    assert sympy.simplify(formula - textbook(matrices)).is_ZeroMatrix or \
        formula == textbook(matrices), formula
    # evaluated by SymPy alone at a symmetric input, against torch's symmetric gradient
    rng = numpy.random.default_rng(3)
    values = {}
    for name, spec in shapes.items():
        shape = (3,) * len(spec)
        values[name] = _sym(_spd(shape, rng)) if getattr(spec, "symmetric", False) \
            else rng.standard_normal(shape)
    leaves = {n: torch.tensor(v, requires_grad=n == wrt) for n, v in values.items()}
    args = [(t + t.mT) / 2 if getattr(shapes[n], "symmetric", False) else t
            for n, t in leaves.items()]
    (ref,) = torch.autograd.grad(f(*args), [leaves[wrt]])
    ours = evaluate_formula(formula, values, {N: 3})
    numpy.testing.assert_allclose(ours.reshape(ref.shape), ref.numpy(), rtol=1e-9, atol=1e-12)
    report = g.verify()
    assert report.ok, str(report)


def test_transposes_of_a_symmetric_input_collapse():
    X = sg.symbol("X", ("n", "n"), symmetric=True)
    B = sg.symbol("B", ("b", "n", "n"), symmetric=True)
    x = sg.symbol("x", ("n",))
    assert X.T is X and B.transpose(-1, -2) is B
    assert (X + X.T).op == "mul"                      # 2 X
    assert (x @ X) is (X @ x)                         # xᵀX = (X x)ᵀ
    assert sg.inv(X).T is sg.inv(X)                   # X⁻ᵀ = X⁻¹
    A = sg.symbol("A", ("n", "n"))
    assert (A @ A.T).T is A @ A.T and (A @ X @ A.T).T is A @ X @ A.T
    assert (A.T).T is A and A.T is not A              # a plain input is left alone


def test_the_symmetrisation_is_built_once_and_vanishes_when_symmetric():
    g = sg.grad_fn(lambda X, A: sg.trace(A @ X), wrt="X", shapes={"X": SYM, "A": ("n", "n")})
    assert "(1/2)*(A + A.T)" == str(g.formulas["X"])
    assert sum(line.endswith("/2") for line in g.program().splitlines()) == 1
    g = sg.grad_fn(lambda X: sg.sum(X * X) + sg.trace(X), shapes={"X": SYM})
    assert ".T" not in g.program()                    # 2X + I is symmetric as built


# ----- Hessians, Jacobians, forward mode -------------------------------------------------------

def test_hessian_and_jacobian_act_on_symmetric_directions():
    rng = numpy.random.default_rng(1)
    X, A = _spd((3, 3), rng), rng.standard_normal((3, 3))

    def f(X, A):
        return sg.sum(sg.sin(X @ A @ X)) + sg.logdet(X)

    def ft(X, A):
        X = (X + X.mT) / 2
        return torch.sin(X @ A @ X).sum() + torch.logdet(X)

    tX, tA = torch.tensor(X), torch.tensor(A)
    H = sg.hessian(f, wrt="X", shapes={"X": SYM, "A": ("n", "n")})
    numpy.testing.assert_allclose(H(X, A), torch.func.hessian(ft)(tX, tA).numpy(),
                                  rtol=1e-9, atol=1e-11)

    def jt(X, A):
        return torch.sin(((X + X.mT) / 2) @ A)
    ref = torch.func.jacrev(jt)(tX, tA).numpy()
    for mode in ("forward", "reverse"):
        J = sg.jacobian(lambda X, A: sg.sin(X @ A), wrt="X",
                        shapes={"X": SYM, "A": ("n", "n")}, mode=mode)
        numpy.testing.assert_allclose(J(X, A), ref, rtol=1e-12, atol=1e-14)


def test_mixed_hessian_with_a_symmetric_input():
    rng = numpy.random.default_rng(2)
    x, A = rng.standard_normal(3), _sym(rng.standard_normal((3, 3)))
    H = sg.hessian(lambda x, A: sg.sum(sg.tanh(A @ x)) * (x @ A @ x),
                   shapes={"x": ("n",), "A": SYM})
    ours = H(x, A)

    def ft(x, A):
        A = (A + A.mT) / 2
        return torch.tanh(A @ x).sum() * (x @ A @ x)
    ref = torch.func.hessian(ft, argnums=(0, 1))(torch.tensor(x), torch.tensor(A))
    for i in range(2):
        for j in range(2):
            numpy.testing.assert_allclose(ours[i][j], ref[i][j].numpy(), rtol=1e-9, atol=1e-11)


def test_tangents_of_a_symmetric_input_are_symmetric():
    X = sg.symbol("X", ("n", "n"), symmetric=True)
    A = sg.symbol("A", ("n", "n"))
    V = sg.symbol("V", ("n", "n"))
    _, t = sg.jvp(lambda X: sg.trace(A @ X), (X,), (V,))
    _, vjp_fn = sg.vjp(lambda X: sg.trace(A @ X), X)
    (gx,) = vjp_fn(sg.const(1.0))
    rng = numpy.random.default_rng(4)
    a, v = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    (jv,) = compile_function([t], [A, V], "numpy")(a, v)
    assert numpy.isclose(jv, numpy.trace(a @ (v + v.T) / 2))    # V acts as (V + Vᵀ)/2
    (vj,) = compile_function([gx], [A], "numpy")(a)
    numpy.testing.assert_allclose(vj, (a + a.T) / 2)            # ⟨vj, V⟩ = jv for V = Vᵀ


def test_symbolic_transforms_keep_the_symmetric_gradient():
    X = sg.symbol("X", ("n", "n"), symmetric=True)
    (g,) = sg.grad(sg.logdet(X), [X])
    assert g is sg.inv(X)
    _, (hv,) = sg.hvp(lambda X: sg.logdet(X), (X,), (sg.symbol("V", ("n", "n")),))
    assert hv.T is hv                                  # the Hessian maps into Sym(n)


# ----- sg.check and the command line ---------------------------------------------------------

def _spd_sample(name, shape, rng):
    return _spd(shape, rng) if len(shape) >= 2 else rng.standard_normal(shape)


@pytest.mark.parametrize("case", ["trace_AX", "gaussian", "batch"])
def test_check_compares_with_torch_on_the_symmetrised_function(case):
    f, _, shapes, _, _ = CASES[case]
    report = sg.check(f, shapes=shapes, dims=SIZES, sample=_spd_sample, trials=2)
    assert report.ok


def test_check_catches_a_wrong_symmetric_gradient():
    with pytest.raises(CheckError):
        sg.check(lambda X, A: sg.trace(A @ X), shapes={"X": SYM, "A": ("n", "n")},
                 reference=lambda X, A: torch.trace(A @ X.triu()))


def test_command_line(capsys):
    from symgrad.cli import main
    argv = ["examples/mlp_cli.py:loss", "--shape", "W=n,n", "--shape", "x=n", "--shape", "b=n",
            "--symmetric", "W"]
    assert main(argv) == 0
    assert "dloss/dW = " in capsys.readouterr().out
    assert main(argv + ["--check"]) == 0
    assert main(["examples/mlp_cli.py:loss", "--shape", "x=n", "--symmetric", "W"]) == 2
    assert "--symmetric W needs the shape of W" in capsys.readouterr().err
    assert main(argv[:2] + ["W=n,m"] + argv[3:]) == 2
    assert "square matrix" in capsys.readouterr().err


# ----- values: other backends, unchecked arguments --------------------------------------------

@pytest.mark.parametrize("backend", ["c", "numba", "jax"])
def test_other_backends(backend):
    pytest.importorskip({"c": "cffi", "numba": "numba", "jax": "jax"}[backend])
    f, ft, shapes, spd, wrt = CASES["nonlinear"]
    rng = numpy.random.default_rng(5)
    values = _inputs(shapes, spd, rng)
    directions = _inputs({w: shapes[w] for w in wrt}, (), rng)
    ref, _ = _torch_derivatives(ft, shapes, values, wrt, directions)
    ours = sg.grad_fn(f, wrt=wrt, shapes=shapes).compile(backend)(*values.values())
    for o, r in zip(ours, ref):
        numpy.testing.assert_allclose(numpy.asarray(o), r, rtol=1e-9, atol=1e-11)


def test_a_non_symmetric_argument_is_not_checked():
    """Like torch, compiled code does not test its argument (an O(n²) test per call): the
    formulas, which assume X = Xᵀ, are evaluated as they are."""
    g = sg.grad_fn(lambda X: sg.logdet(X), shapes={"X": SYM})
    X = numpy.array([[2.0, 1.0], [0.0, 3.0]])
    (ours,) = g.compile()(X)
    numpy.testing.assert_allclose(ours, numpy.linalg.inv(X))


# ----- specs ---------------------------------------------------------------------------------

def test_spec_repr_pickle_and_flag():
    assert repr(SYM) == "TensorSpec((n, n), symmetric=True)"
    assert repr(sg.TensorSpec(("n", "n"))) == "Tensor[n, n]"
    again = pickle.loads(pickle.dumps(BATCH))
    assert again.symmetric and again.shape == BATCH.shape and again.dtype == "float64"
    assert not sg.TensorSpec((3, 3)).symmetric
    assert sg.symbol("S", SYM).attrs["symmetric"] is True
    assert "symmetric" not in sg.symbol("P", ("n", "n")).attrs
    g = sg.grad_fn(lambda x, A: x @ A @ x, shapes={"x": ("n",), "A": SYM})
    assert repr(g).startswith("<GradFn of f(x: (n,), A: (n, n) symmetric) w.r.t. x, A>")


@pytest.mark.parametrize("spec, words", [
    (lambda: sg.TensorSpec(("n", "m"), symmetric=True), ["(n, m)", "square", "(n, n)"]),
    (lambda: sg.TensorSpec(("n",), symmetric=True), ["(n,)", "square", "(n, n)"]),
    (lambda: sg.TensorSpec((3, 4), symmetric=True), ["(3, 4)", "(3, 3)"]),
    (lambda: sg.TensorSpec(("n", "n"), dtype="int64", symmetric=True), ["int64", "float"]),
    (lambda: sg.symbol("Q", (2, 5), symmetric=True), ["input Q", "(2, 5)", "square"]),
])
def test_bad_specs_raise_with_the_shape_and_the_fix(spec, words):
    with pytest.raises(ShapeError) as info:
        spec()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_symmetric_must_be_a_bool():
    with pytest.raises(ArgumentError, match="symmetric must be True or False"):
        sg.TensorSpec(("n", "n"), symmetric="yes")
