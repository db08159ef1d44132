"""Every error a user can provoke is a ``sg.SymgradError`` subclass whose message
names the op, the shapes and what to do; never a SymPy traceback or a wrong answer."""
import math
import re
from contextlib import contextmanager

import numpy as np
import pytest
import torch

import symgrad as sg


@contextmanager
def raises(cls, *words):
    """pytest.raises(cls) that also checks the error is a SymgradError and that each
    of ``words`` appears in its message."""
    with pytest.raises(cls) as info:
        yield info
    msg = str(info.value)
    assert isinstance(info.value, sg.SymgradError), type(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in message: {msg}"


def test_every_error_class_is_a_symgrad_error():
    for cls in (sg.ShapeError, sg.UnsupportedOpError, sg.NonScalarOutputError,
                sg.ControlFlowError, sg.RuleError, sg.NotDifferentiableError,
                sg.ArgumentError, sg.CheckError):
        assert issubclass(cls, sg.SymgradError)


# ----- shape mismatches ------------------------------------------------------------------

def test_add_shape_mismatch_names_op_and_both_shapes():
    x, y = sg.symbol("x", (3,)), sg.symbol("y", (4,))
    with raises(sg.ShapeError, "add", "(3,)", "(4,)", "broadcast", "unsqueeze"):
        x + y


def test_add_symbolic_dims_mismatch():
    p, q = sg.symbol("p", ("m",)), sg.symbol("q", ("n",))
    with raises(sg.ShapeError, "add", "(m,)", "(n,)"):
        p + q


def test_matmul_shape_mismatch_names_op_and_both_shapes():
    A, B = sg.symbol("A", (2, 3)), sg.symbol("B", (2, 3))
    with raises(sg.ShapeError, "matmul", "(2, 3) @ (2, 3)", "transpose"):
        A @ B


def test_matmul_of_scalars_says_use_star():
    with raises(sg.ShapeError, "matmul", "()", "use *"):
        sg.symbol("a") @ sg.symbol("b")


def test_shape_error_while_tracing_grad_fn():
    def loss(W, x):
        return sg.sum(W @ x)
    with raises(sg.ShapeError, "matmul", "(m, n)", "(k,)"):
        sg.grad_fn(loss, shapes={"W": ("m", "n"), "x": ("k",)})


# ----- non-scalar outputs ----------------------------------------------------------------

def test_grad_fn_non_scalar_output_points_to_vjp_and_jacobian():
    def f(x):
        return sg.sin(x)
    with raises(sg.NonScalarOutputError, "f()", "(3,)", "scalar", "sg.vjp", "sg.jacobian",
                "sg.sum"):
        sg.grad_fn(f, shapes={"x": (3,)})


def test_grad_fn_tuple_output_points_to_vjp():
    def pair(x):
        return x, x
    with raises(sg.NonScalarOutputError, "pair", "2 values", "sg.vjp"):
        sg.grad_fn(pair)


def test_grad_without_grad_outputs_needs_scalar_output():
    x = sg.symbol("x", (3,))
    with raises(sg.NonScalarOutputError, "scalar outputs", "(3,)", "grad_outputs"):
        sg.grad(x * 2, [x])


def test_wrong_grad_outputs_shape_names_both_shapes():
    x = sg.symbol("x", (3,))
    with raises(sg.ShapeError, "grad_outputs[0]", "(4,)", "(3,)"):
        sg.grad(x * 2, [x], grad_outputs=sg.symbol("v", (4,)))


def test_wrong_grad_outputs_shape_as_a_list():
    x = sg.symbol("x", (2, 3))
    with raises(sg.ShapeError, "(3, 2)", "(2, 3)"):
        sg.grad([x * 2], [x], grad_outputs=[sg.symbol("v", (3, 2))])


def test_wrong_grad_outputs_shape_as_numpy_array():
    x = sg.symbol("x", (3,))
    with raises(sg.ShapeError, "(4,)", "(3,)"):
        sg.grad(x * 2, [x], grad_outputs=np.ones(4))


def test_grad_outputs_count_mismatch():
    x = sg.symbol("x", (3,))
    with raises(sg.SymgradError, "1 outputs", "2 grad_outputs"):
        sg.grad([x * 2], [x], grad_outputs=[sg.symbol("v", (3,)), sg.symbol("w", (3,))])


# ----- unused inputs ---------------------------------------------------------------------

def test_unused_input_raises_like_torch():
    a, c = sg.symbol("a"), sg.symbol("c")
    with raises(sg.SymgradError, "inputs[1]", "c", "not have been used", "allow_unused=True"):
        sg.grad(a * 2, [a, c])


def test_unused_input_allowed_gives_none():
    a, c = sg.symbol("a"), sg.symbol("c")
    da, dc = sg.grad(a * 2, [a, c], allow_unused=True)
    assert dc is None
    assert da is sg.const(2)


def test_unused_input_materialized_gives_zeros_of_its_shape():
    x, y = sg.symbol("x", (3,)), sg.symbol("y", (4, 2))
    dx, dy = sg.grad((x * 2).sum(), [x, y], materialize_grads=True)
    assert dy.shape == (4, 2)
    assert dy.op == "const" and dy.attrs["value"] == 0


# ----- control flow on symbolic values ---------------------------------------------------

def test_if_on_symbolic_value_points_to_where():
    def f(x):
        if x > 0:
            return x
        return -x
    with raises(sg.ControlFlowError, "truth value", "if", "sg.where"):
        sg.grad_fn(f)


def test_while_and_and_on_symbolic_values():
    x = sg.symbol("x")
    with raises(sg.ControlFlowError, "sg.where"):
        while x < 3:
            break
    with raises(sg.ControlFlowError, "sg.where"):
        (x > 0) and (x < 1)


def test_float_of_symbolic_tensor():
    with raises(sg.ControlFlowError, "float()", "symbolic", "sg.where"):
        float(sg.symbol("x"))


def test_math_function_on_symbolic_tensor():
    with raises(sg.ControlFlowError, "symbolic"):
        math.sin(sg.symbol("x"))


def test_int_of_symbolic_tensor():
    with raises(sg.ControlFlowError, "symbolic"):
        int(sg.symbol("x"))


# ----- unsupported ops -------------------------------------------------------------------

def test_numpy_function_on_symbolic_tensor():
    def f(x):
        return np.cumsum(x)
    with raises(sg.UnsupportedOpError, "cumsum", "sg.cumsum", "sg.Function"):
        sg.grad_fn(f, shapes={"x": ("n",)})
    with raises(sg.UnsupportedOpError, "numpy.add.reduce", "sg.sum", "sg.Function"):
        sg.grad_fn(lambda x: np.add.reduce(x), shapes={"x": ("n",)})


def test_numpy_elementwise_functions_trace_as_their_sg_ops():
    import torch

    def f(x, y):
        return sg.sum(np.sin(x) * np.absolute(y) + np.arctan2(x, y) + np.exp(x) / 2)
    g = sg.grad_fn(f, shapes={"x": ("n",), "y": ("n",)})
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    y = torch.randn(5, dtype=torch.float64, requires_grad=True)
    ref = torch.autograd.grad((torch.sin(x) * y.abs() + torch.atan2(x, y)
                               + torch.exp(x) / 2).sum(), (x, y))
    for ours, r in zip(g.compile("numpy")(x.detach().numpy(), y.detach().numpy()), ref):
        np.testing.assert_allclose(ours, r.numpy(), rtol=1e-12)


def test_op_without_rule_names_it_and_says_how_to_add_one(monkeypatch):
    monkeypatch.delitem(sg.rules._rules, "sinh")
    with raises(sg.UnsupportedOpError, "sinh", "rules/"):
        sg.grad_fn(lambda x: sg.sinh(x))


# ----- compiled functions called wrongly -------------------------------------------------

def loss(W, x):
    return sg.sum(sg.tanh(W @ x))


@pytest.fixture(scope="module")
def compiled():
    g = sg.grad_fn(loss, shapes={"W": ("m", "n"), "x": ("n",)})
    return {"numpy": (g.compile("numpy"), np.ones), "torch": (g.compile("torch"), torch.ones)}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_compiled_wrong_argument_count(compiled, backend):
    fn, ones = compiled[backend]
    with raises(sg.ArgumentError, "takes 2 arguments", "(W, x)", "got 1"):
        fn(ones((2, 3)))
    with raises(sg.ArgumentError, "got 3"):
        fn(ones((2, 3)), ones(3), ones(3))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_compiled_wrong_rank(compiled, backend):
    fn, ones = compiled[backend]
    with raises(sg.ArgumentError, "argument x", "(n,)", "(3, 3)"):
        fn(ones((2, 3)), ones((3, 3)))
    with raises(sg.ArgumentError, "argument W", "(m, n)", "(3,)"):
        fn(ones(3), ones(3))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_compiled_inconsistent_symbolic_dim_names_the_dim(compiled, backend):
    fn, ones = compiled[backend]
    with raises(sg.ArgumentError, "argument x", "(n,)", "(4,)", "n = 3", "W.shape[1]"):
        fn(ones((2, 3)), ones(4))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_compiled_wrong_concrete_dim(backend):
    g = sg.grad_fn(lambda v: sg.sum(v * v), shapes={"v": (3,)})
    fn = g.compile(backend)
    ones = np.ones if backend == "numpy" else torch.ones
    with raises(sg.ArgumentError, "argument v", "(3,)", "(4,)"):
        fn(ones(4))


def test_compiled_scalar_given_an_array():
    fn = sg.grad_fn(lambda x: sg.sin(x) * x).compile("numpy")
    with raises(sg.ArgumentError, "argument x", "()", "(2,)"):
        fn(np.ones(2))


# ----- bad arguments to grad_fn ----------------------------------------------------------

def test_unknown_parameter_in_shapes():
    with raises(sg.SymgradError, "'z'", "not parameters", "loss(W, x)"):
        sg.grad_fn(loss, shapes={"W": (2, 3), "z": (3,)})


@pytest.mark.parametrize("wrt, words", [
    ("z", ["'z'", "not a parameter", "loss(W, x)"]),
    (("W", "q"), ["'q'", "not a parameter"]),
    (5, ["wrt=5", "out of range", "2 parameters"]),
    (1.5, ["1.5"]),
])
def test_wrt_naming_a_non_parameter(wrt, words):
    with raises(sg.SymgradError, *words):
        sg.grad_fn(loss, wrt=wrt, shapes={"W": (2, 3), "x": (3,)})


def test_dim_named_like_a_parameter():
    with raises(sg.SymgradError, "'x'", "parameter names", "rename"):
        sg.grad_fn(loss, shapes={"W": ("m", "x"), "x": ("x",)})


@pytest.mark.parametrize("shape, words", [
    ((-1,), ["non-negative", "-1"]),
    (("2n",), ["identifier", "'2n'"]),
    ((1.5,), ["int or a name", "1.5"]),
])
def test_bad_dims(shape, words):
    with raises(sg.ShapeError, *words):
        sg.grad_fn(lambda v: sg.sum(v), shapes={"v": shape})


def test_grad_wrt_a_non_symbol():
    x = sg.symbol("x")
    with raises(sg.SymgradError, "inputs[0]", "float", "sg.symbol"):
        sg.grad(x * 2, [1.0])


def test_no_sympy_traceback_in_messages():
    """The messages are ours: no SymPy class names leak into them."""
    msgs = []
    for build in (lambda: sg.symbol("x", (3,)) + sg.symbol("y", (4,)),
                  lambda: sg.grad_fn(lambda v: sg.tanh(v), shapes={"v": ("n",)}),
                  lambda: float(sg.symbol("x"))):
        with pytest.raises(sg.SymgradError) as info:
            build()
        msgs.append(str(info.value))
    for msg in msgs:
        assert not re.search(r"Symbol\(|Integer\(|sympy", msg), msg
