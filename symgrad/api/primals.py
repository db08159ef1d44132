"""The primals of a transform at concrete or symbolic values: placeholders traced in their
place, the plan (traced graph and compiled code) kept per input signature (``api.cache``),
and the conversion of results back to the primals' kind. Used by ``api.transforms``."""
import functools
from typing import Any

import numpy

from ..codegen import compile_function
from ..core.build import (
    as_tensor, is_numeric, is_symmetric_leaf, naming_captures, torch_module)
from ..core.constructors import zeros
from ..core.graph import Tensor
from ..core.shapes import TensorSpec, fmt_shape, shapes_equal
from ..diff.batching import placeholder
from ..diff.function import substitute
from ..errors import ShapeError, SymgradError
from ..torchfront.factories import symbolic_sizes
from . import cache
from .grad import parameters


# ----- output structures (tuples, lists and dicts of values) -------------------------------

def flatten(tree):
    """(leaves, spec): the values in a nest of tuples, lists and dicts, and its shape."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for item in tree:
            sub, spec = flatten(item)
            leaves += sub
            specs.append(spec)
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, specs = [], []
        for k in keys:
            sub, spec = flatten(tree[k])
            leaves += sub
            specs.append(spec)
        return leaves, (dict, (keys, specs))
    return [tree], None


def unflatten(spec, leaves):
    it = iter(leaves)

    def build(spec):
        if spec is None:
            return next(it)
        kind, specs = spec
        if kind is dict:
            keys, subs = specs
            return {k: build(s) for k, s in zip(keys, subs)}
        return kind(build(s) for s in specs)
    return build(spec)


# ----- the kind of the primals ---------------------------------------------------------------

def _shape_of(v):
    if isinstance(v, Tensor):
        return v.shape
    return tuple(int(d) for d in numpy.shape(v))


def _placeholder_spec(v):
    """The shape of a primal's placeholder: a symmetric input stays symmetric, so the
    derivative w.r.t. it is the symmetric one, as for ``sg.grad``."""
    if isinstance(v, Tensor) and is_symmetric_leaf(v):
        return TensorSpec(v.shape, symmetric=True)
    return _shape_of(v)


class Primals:
    """The primals of a transform, their placeholders, and how results go back: substituted
    (symbolic primals) or computed by compiled code and returned as the primals' kind."""

    plan: Any = None        # the cached trace and compiled code for this signature
    tangents: Any = None    # a jvp's tangents, as given

    def __init__(self, f, what, primals):
        self.what = what
        self.values = list(primals)
        self.f = f
        for i, v in enumerate(self.values):
            if not isinstance(v, Tensor) and not is_numeric(v):
                names = _param_names(f, len(primals))
                raise SymgradError(
                    f"{what}: primal {i} ({names[i]}) is a {type(v).__name__}; pass numbers, "
                    "NumPy arrays, torch tensors or symbolic Tensors (sg.symbol)")
        torch = torch_module()
        if any(isinstance(v, Tensor) for v in self.values):
            self.kind = "symbolic"
        elif torch is not None and any(isinstance(v, torch.Tensor) for v in self.values):
            self.kind = "torch"
        else:
            self.kind = "numpy"
        self.plain = all(isinstance(v, (int, float)) for v in self.values)
        self.plan = None

    def bind(self):
        """Placeholders for the primals (one symbol each, shaped like it) and a new plan."""
        names = _param_names(self.f, len(self.values))
        self.placeholders = [placeholder(f"p_{n}_", _placeholder_spec(v))
                             for n, v in zip(names, self.values)]
        self.names = names
        self.plan = Plan(self.placeholders)

    def cached(self, options, build, has_aux=False):
        """The transform's result: ``build()`` (which traces ``f`` on the placeholders
        and returns ``finish(primals) -> result``) run once per input signature (see
        ``api.cache``); symbolic primals and ``has_aux`` trace every call."""
        k = None if self.kind == "symbolic" or has_aux else cache.key(self.f, options,
                                                                          self.values)
        plan = cache.get(k, self.f) if k is not None else None
        if plan is not None:
            self.plan = plan
            return plan.finish(self)
        self.bind()
        plan = self.plan
        plan.finish = build()
        if k is not None:
            cache.put(k, self.f, plan)
        return plan.finish(self)

    def trace(self, f, has_aux=False):
        """f on the placeholders: (flat output Tensors, output spec, aux)."""
        with symbolic_sizes(), naming_captures(f):
            out = f(*self.placeholders)
        aux = None
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise SymgradError(f"{self.what}: has_aux=True needs f to return a pair "
                                   f"(output, aux), got {type(out).__name__}")
            out, aux = out
        leaves, spec = flatten(out)
        return [as_tensor(o, self.what) for o in leaves], spec, aux

    # ----- results ---------------------------------------------------------------------------
    def results(self, nodes, shapes, extra=(), extra_values=()):
        """The values of ``nodes`` (None: zeros of the given shape) at the primals, with the
        ``extra`` placeholders bound to ``extra_values``."""
        if self.kind == "symbolic":
            mapping = {id(p): as_tensor(v, self.what)
                       for p, v in zip(self.placeholders + list(extra),
                                       self.values + list(extra_values))}
            filled = [zeros(s) if n is None else n for n, s in zip(nodes, shapes)]
            return substitute(filled, mapping)
        inputs = self.plan.placeholders + list(extra)
        key = (tuple(map(id, nodes)), tuple(map(id, extra)), tuple(map(tuple, shapes)))
        compiled = self.plan.compiled
        fn = compiled.get(key)   # vjp_fn, called again, reuses its compiled code
        if fn is None:
            fn = compiled[key] = compile_function(
                list(nodes), inputs, self.kind, self.what.replace(".", "_"),
                zero_shapes=list(shapes))
        return [self._convert(v) for v in fn(*self._args(self.values + list(extra_values)))]

    def _args(self, values):
        torch = torch_module()
        out = []
        for v in values:
            if isinstance(v, bool) or isinstance(v, int):
                v = float(v)
            elif torch is not None and isinstance(v, torch.Tensor) and not v.is_floating_point():
                v = v.to(torch.float64)
            elif isinstance(v, numpy.ndarray) and not numpy.issubdtype(v.dtype, numpy.floating):
                v = v.astype(float)
            out.append(v)
        return out

    def _convert(self, v):
        """A computed result as the transform returns it: the compiled code's dtype (the
        primals' floats, promoted: README "dtype policy"), as torch.func keeps it; Python
        floats for Python-float primals."""
        if self.kind == "torch":
            torch = torch_module()
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                return v
            floats = [p.dtype for p in self.values
                      if isinstance(p, torch.Tensor) and p.is_floating_point()]
            dtype = functools.reduce(torch.promote_types, floats) if floats else torch.float64
            ref = next(p for p in self.values if isinstance(p, torch.Tensor))
            return torch.as_tensor(v, dtype=dtype, device=ref.device)
        if self.plain and numpy.ndim(v) == 0:
            return float(v)
        v = numpy.asarray(v)
        return v if v.dtype.kind == "f" else v.astype(float)

    def check_like(self, values, what, shapes):
        """``values`` (tangents, cotangents) one per placeholder shape, shapes equal."""
        if len(values) != len(shapes):
            raise SymgradError(f"{self.what}: expected {len(shapes)} {what}, got {len(values)}")
        for i, (v, s) in enumerate(zip(values, shapes)):
            if not isinstance(v, Tensor) and not is_numeric(v):
                raise SymgradError(f"{self.what}: {what}[{i}] is a {type(v).__name__}; pass "
                                   "numbers, arrays, torch tensors or symbolic Tensors")
            got = _shape_of(v)
            if not shapes_equal(tuple(got), tuple(s)):
                raise ShapeError(f"{self.what}: {what}[{i}] has shape {fmt_shape(got)} but "
                                 f"must have the shape {fmt_shape(s)} of "
                                 f"{self._of(what, i)}")

    def _of(self, what, i):
        if what != "tangents":
            return f"output {i}"
        return f"primals[{i}] ({_param_names(self.f, len(self.values))[i]})"


class Plan:
    """What a transform traced for one input signature: the placeholders, the compiled
    functions of its graph (by the nodes they compute) and ``finish(primals)``, which
    computes the result at new primals of the same signature."""

    __slots__ = ("placeholders", "compiled", "finish", "__weakref__")

    def __init__(self, placeholders):
        self.placeholders = placeholders
        self.compiled = {}
        self.finish = None


def _param_names(f, n):
    try:
        names = [p.name for p in parameters(f)]
    except SymgradError:
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]
