"""Edge runs of a generated program: the same compiled gradient on inputs at the edges,
against torch.autograd on the same values, checking shape and dtype as well as values.

Modes (``EDGE_MODES``):

* ``float64``: the program's own draws; every result has the input's shape and dtype;
* ``float32``: the draws rounded to float32; results are float32 (symgrad's dtype policy,
  torch's for inputs of one dtype) and near torch's float64 gradient at the same values;
* ``integer``: unrestricted inputs as int64 arrays of rounded draws (ties and zeros on
  purpose); results float64, equal to torch's on the same values as float64; rounding
  lands on singular points (hypot at (0, 0), a product with two zeros), so values are
  compared as in the nonfinite mode;
* ``nonfinite``: one element of an elementwise-drawn input is nan, inf or -inf. Where torch's
  gradient is finite symgrad's must equal it; where torch's is not finite, symgrad's may
  be anything: it differentiates the formula after SymPy simplified it, so x - x is 0
  even at inf, where torch computes nan (counted as ``cancelled``). One exception: where
  a nan or inf reaches a factorisation (solve, inverse, det, logdet, cholesky), a
  product (prod, cumprod) or a running log-sum-exp (inf - inf inside it), the gradient
  depends on the algorithm (LU pivoting, which elements a product skips: one with two
  zeros has gradient 0, whatever the incoming gradient), so
  symgrad's and torch's differ elementwise and only shapes and dtypes are compared
  (counted as ``spread``). And maximum(v, v) is v to symgrad, so its gradient at a nan
  is 1 where torch's sends the full gradient to both operands (2): programs with such a
  step are not compared at nan (counted as ``simplified``);
* ``empty``: a symbolic dim is 0 (zero-size inputs): torch's gradient, or an error on
  both sides (a SymgradError from symgrad). A program whose shapes hold a dim expression
  (x[1:] has n - 1 elements) may refuse n = 0 with an ArgumentError saying so, where
  torch gives an empty result (counted as ``refused``). The mean of nothing is nan, so
  values are compared as in the nonfinite mode.

A problem is a string; ``check_edges`` returns them all.
"""
from collections import Counter
from dataclasses import replace

import numpy as np
import torch

import symgrad as sg
from symgrad.core.graph import topo_order
from symgrad.core.shapes import dim_symbol

import rule_specs

from .programs import REAL, domain_of

EDGE_MODES = ("float64", "float32", "integer", "nonfinite", "empty")
RTOL, ATOL = 1e-7, 1e-9
LOOSE = 2e-3                 # float32 against float64: relative to the gradient's scale
ROUNDABLE = {rule_specs.normal, rule_specs.distinct}


def concrete(shape, sizes):
    """A shape of ints, dim names and dim expressions at the dim sizes ``sizes``."""
    subs = {dim_symbol(k): v for k, v in sizes.items()}
    return tuple(d if isinstance(d, int) else sizes[d] if isinstance(d, str)
                 else int(d.subs(subs)) for d in shape)


def free_inputs(program):
    """Indices of inputs any real value suits (drawn by a plain normal sampler)."""
    return [k for k, i in enumerate(program.inputs)
            if i.sampler in ROUNDABLE and domain_of(i.sampler) == REAL]


def elementwise_inputs(program):
    """Indices of inputs whose elements are drawn one by one (not class indices, not a
    structured matrix or distribution), any of which may be nan or inf."""
    return [k for k, i in enumerate(program.inputs)
            if domain_of(i.sampler).kind in ("real", "interval") and i.shape]


def torch_gradients(program, arrays, dtype=np.float64):
    """torch.autograd's gradient of the program's reference at ``arrays`` (in
    ``dtype``, float64 by default), or the exception torch raised."""
    ts = [torch.tensor(np.asarray(a, dtype=dtype), requires_grad=True) for a in arrays]
    try:
        out = program.function("torch")(*ts)
        grads = torch.autograd.grad(out, ts, allow_unused=True, materialize_grads=True)
    except Exception as e:  # noqa: BLE001 - torch's refusal is the expected answer
        return e
    return [g.detach().numpy().astype(np.float64) for g in grads]


def as_arg(a, backend):
    if backend == "torch":
        return torch.as_tensor(np.asarray(a))
    return a if np.ndim(a) else a[()] if isinstance(a, np.ndarray) else a


def result_dtype(r):
    if isinstance(r, torch.Tensor):
        return str(r.dtype).replace("torch.", "")
    return np.asarray(r).dtype.name


def agreement(arr, ref, rtol, atol):
    return (np.isnan(arr) == np.isnan(ref)) & np.isclose(arr, ref, rtol=rtol, atol=atol,
                                                        equal_nan=True)


SPREADING = {"solve", "inverse", "det", "logdet", "logabsdet", "slogdet", "cholesky", "prod",
             "cumprod", "logcumsumexp"}


def compare(label, got, ref, shape, dtype, rtol, atol, also=None, notes=None, spread=False):
    """Problems with ``got``: its shape, dtype, and values that agree neither with
    ``ref`` nor with ``also`` (torch in the same low precision). With ``notes`` (a
    Counter: the nonfinite mode) only elements where torch's gradient is finite must
    agree, and with ``spread`` they may be nan."""
    problems = []
    arr = got.detach().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    if tuple(arr.shape) != tuple(shape):
        return [f"{label}: shape {tuple(arr.shape)}, the input's is {tuple(shape)}"]
    if result_dtype(got) != dtype:
        problems.append(f"{label}: dtype {result_dtype(got)}, expected {dtype}")
    arr = arr.astype(np.float64)
    ok = agreement(arr, ref, rtol, atol)
    if also is not None:
        ok |= agreement(arr, also, rtol, atol)
    if notes is not None:
        free = ~np.isfinite(ref)
        notes["cancelled"] += int((free & np.isfinite(arr)).sum())
        ok |= free
        if spread:
            notes["spread"] += int((~ok).sum())
            ok |= True
    if not ok.all():
        bad = np.argwhere(~ok)[0]
        idx = tuple(int(i) for i in bad)
        problems.append(f"{label}: at {idx} symgrad gives {arr[idx]!r}, torch gives "
                        f"{ref[idx]!r}")
    return problems


class EdgeRun:
    """One program's gradient function, compiled for both backends once."""

    def __init__(self, program, rng, notes=None, backends=("numpy", "torch")):
        self.program = program
        self.rng = rng
        self.notes = Counter() if notes is None else notes
        self.g = sg.grad_fn(program.function("sg"), shapes=program.shapes)
        self.ops = {n.op for n in topo_order(self.g.grads + [self.g.output])
                    if n is not None}
        self.compiled = {b: self.g.compile(b) for b in backends}

    def draw(self, sizes):
        p = self.program
        return [np.asarray(p.sample(i.name, concrete(x.shape, sizes), self.rng),
                           dtype=np.float64)
                for i, x in zip(p.inputs, self.g.inputs)]

    def run(self, mode, arrays, rtol=RTOL, atol=ATOL, dtype="float64", sizes=None,
            nonfinite=False):
        """Both backends on ``arrays`` against torch on the same values in float64 (and,
        for float32 arrays, in float32 too: a comparison may flip at that precision);
        ``sizes`` overrides the program's dims (its broadcasts) in torch's run."""
        reference = self.program if sizes is None else replace(self.program, dims=sizes)
        spread = bool(SPREADING & self.ops)
        ref = torch_gradients(reference, arrays)
        low = torch_gradients(reference, arrays, np.float32) if dtype == "float32" \
            else None
        problems = []
        for backend, fn in self.compiled.items():
            label = f"{mode} [{backend}]"
            try:
                got = fn(*[as_arg(a, backend) for a in arrays])
            except sg.SymgradError as e:
                if "must not be negative" in str(e):
                    self.notes["refused"] += 1     # a dim expression such as n - 1 at n = 0
                    continue
                if not isinstance(ref, Exception):
                    problems.append(f"{label}: symgrad raised {type(e).__name__}: {e}; torch "
                                    "gives a gradient")
                continue
            except Exception as e:  # noqa: BLE001 - a crash is a finding
                problems.append(f"{label}: crash {type(e).__name__}: {e}")
                continue
            if isinstance(ref, Exception):
                continue      # torch refuses what symgrad computes: symgrad is more lenient
            for k, (x, gr, r, a) in enumerate(zip(self.g.inputs, got, ref, arrays)):
                scale = max(1.0, float(np.max(np.abs(np.where(np.isfinite(r), r, 0)),
                                              initial=0.0)))
                also = low[k] if isinstance(low, list) else None
                problems += compare(f"{label} d/d{x.name}", gr, r, np.shape(a), dtype,
                                    rtol, atol * scale, also,
                                    self.notes if nonfinite else None, nonfinite and spread)
        return problems

    # ----- modes ------------------------------------------------------------------------
    def float64(self):
        return self.run("float64", self.draw(self.program.dims))

    def float32(self):
        arrays = [a.astype(np.float32) for a in self.draw(self.program.dims)]
        return self.run("float32", arrays, rtol=LOOSE, atol=LOOSE, dtype="float32")

    def integer(self):
        free = free_inputs(self.program)
        if not free:
            return []
        arrays = self.draw(self.program.dims)
        for k in free:
            arrays[k] = np.round(arrays[k] * 1.5).astype(np.int64)
        return self.run("integer", arrays, nonfinite=True)

    def nonfinite(self):
        if any(step.op in ("maximum", "minimum") and
               len({o.value for o in step.operands}) == 1 for step in self.program.steps):
            self.notes["simplified"] += 1
            return []
        free = elementwise_inputs(self.program)
        arrays = self.draw(self.program.dims)
        free = [k for k in free if arrays[k].size]
        if not free:
            return []
        k = free[self.rng.integers(len(free))]
        flat = arrays[k].reshape(-1)
        flat[self.rng.integers(flat.size)] = self.rng.choice([np.nan, np.inf, -np.inf])
        return self.run("nonfinite", arrays, nonfinite=True)

    def empty(self):
        p = self.program
        used = sorted({str(d) for x in self.g.inputs for d in x.shape
                       if not isinstance(d, int)} & set(p.dims))
        if not used:
            return []
        name = used[self.rng.integers(len(used))]
        sizes = dict(p.dims, **{name: 0})
        try:
            arrays = self.draw(sizes)
        except Exception:  # noqa: BLE001 - a structured sampler with no empty form
            return []
        return self.run(f"empty ({name}=0)", arrays, sizes=sizes, nonfinite=True)


def check_edges(program, seed, modes=EDGE_MODES, notes=None, backends=("numpy", "torch")):
    """Problems found running ``program``'s gradient in ``modes`` (``notes``: a Counter
    of the tolerated differences, see the module docstring) on ``backends``."""
    run = EdgeRun(program, np.random.default_rng(seed), notes, backends)
    problems = []
    for mode in modes:
        problems += getattr(run, mode)()
    return problems
