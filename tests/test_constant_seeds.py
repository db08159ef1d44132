"""Every rule fed a constant incoming gradient, on every backend.

``test_rules`` differentiates ``sum(op(...) * w_out)``, so each rule receives an array. A
mean, the commonest loss, hands the rule a constant instead: 1/size, and with symbolic
dims a quotient of dims (``float(numpy.float64(1)/n)`` in code). Code that needs a
tensor there (an aten op, ``torch.where`` of two constants) or that reads the quotient
as a traced value (jax.numpy under jit) failed only on this path. Here the loss is
``mean(op(...))``:

* ``test_gradient_of_the_mean``: ``sg.check`` against ``torch.autograd`` (float64) for
  NumPy, torch and JAX together (the C backend under ``slow``);
* ``test_dtype_of_the_mean``: float64 inputs give float64 gradients and float32 inputs
  float32 ones on every backend, as torch.autograd gives.

The default run takes each op's first case with symbolic dims (else its first case);
``slow`` takes every case.
"""
import numpy as np
import pytest
import torch

import symgrad as sg

from backend_support import require_backend
from rule_specs import SPECS
from test_rules import seed_of, with_signature

BACKENDS = ("numpy", "torch", "jax")


def cases():
    out = []
    for spec in SPECS.values():
        first = next((c for c in spec.cases if c.dims), spec.cases[0])
        for case in spec.cases:
            marks = [] if case is first else [pytest.mark.slow]
            out.append(pytest.param(spec, case, id=f"{spec.op}-{case.id}", marks=marks))
    return out


def mean_losses(spec, case):
    names = list(case.shapes)
    build, ref, kw = spec.build_for(case), spec.ref_for(case), case.params
    loss = with_signature(lambda *a: sg.mean(build(*a, **kw)), names, "loss")
    loss_ref = with_signature(lambda *a: torch.mean(ref(*a, **kw)), names, "loss_ref")
    return loss, loss_ref


def sampler(spec, case):
    return lambda name, shape, rng: spec.sampler(case, name)(shape, rng)


@pytest.mark.parametrize("spec, case", cases())
def test_gradient_of_the_mean(spec, case):
    for b in BACKENDS:
        require_backend(b)
    loss, loss_ref = mean_losses(spec, case)
    report = sg.check(loss, shapes=dict(case.shapes), dims=case.dims or None, order=1,
                      sample=sampler(spec, case), reference=loss_ref, trials=1,
                      seed=seed_of(spec, case), backends=BACKENDS, equal_nan=True)
    assert all(f"d/d{x} [jax]" in report.max_abs_error for x in report.wrt)


@pytest.mark.slow
@pytest.mark.parametrize("spec, case", [p for p in cases() if not p.marks])
def test_gradient_of_the_mean_in_c(spec, case):
    require_backend("c")
    loss, loss_ref = mean_losses(spec, case)
    sg.check(loss, shapes=dict(case.shapes), dims=case.dims or None, order=1,
             sample=sampler(spec, case), reference=loss_ref, trials=1,
             seed=seed_of(spec, case), backends=("c",), equal_nan=True)


def concrete_inputs(spec, case, g):
    rng = np.random.default_rng(seed_of(spec, case))
    out = []
    for x in g.inputs:
        shape = tuple(d if isinstance(d, int) else case.dims[str(d)] for d in x.shape)
        if x.kind == "int":
            out.append(rng.integers(0, 2, shape))
        else:
            out.append(np.asarray(spec.sampler(case, x.name)(shape, rng), dtype=np.float64))
    return out


def as_backend(value, backend):
    return torch.from_numpy(np.array(value)) if backend == "torch" else value


def dtype_name(value):
    """A Python float (a program of scalars returns them, as ``math`` computes) is a
    float64."""
    if type(value) is float:
        return "float64"
    return str(value.dtype).replace("torch.", "")


@pytest.mark.parametrize("spec, case", cases())
def test_dtype_of_the_mean(spec, case):
    for b in BACKENDS:
        require_backend(b)
    loss, _ = mean_losses(spec, case)
    g = sg.grad_fn(loss, shapes=dict(case.shapes))
    if any(x.kind not in ("float", "int") for x in g.inputs):
        pytest.skip("inputs that are neither floats nor ids")
    inputs = concrete_inputs(spec, case, g)
    for dtype in (np.float64, np.float32):
        args = [a.astype(dtype) if a.dtype.kind == "f" else a for a in inputs]
        for b in BACKENDS:
            grads = g.compile(b)(*[as_backend(a, b) for a in args])
            for x, d in zip(g.wrt, grads):
                assert dtype_name(d) == np.dtype(dtype).name, (
                    f"{b}: d/d{x.name} is {d.dtype} for {np.dtype(dtype).name} inputs")
