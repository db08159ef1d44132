"""The primals of a transform at concrete or symbolic values: placeholders traced in their
place, the plan (traced graph and compiled code) kept per input signature (``api.cache``),
and the conversion of results back to the primals' kind. Used by ``api.transforms``."""
import functools
import inspect
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
from ..errors import ArgumentError, ShapeError, SymgradError
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


def _placeholder_spec(v, kind=None):
    """The shape of a primal's placeholder: a symmetric input stays symmetric, so the
    derivative w.r.t. it is the symmetric one, as for ``sg.grad``; an integer or bool
    primal that is not differentiated is an input of that kind (ids, a mask)."""
    if isinstance(v, Tensor) and is_symmetric_leaf(v):
        return TensorSpec(v.shape, symmetric=True)
    if kind is not None:
        return TensorSpec(_shape_of(v), dtype=kind)
    return _shape_of(v)


def _dtype_kind(v):
    """The NumPy dtype kind of a numeric value ('f', 'i', 'b', 'c', ...)."""
    if isinstance(v, bool):
        return "b"
    if isinstance(v, int):
        return "i"
    if isinstance(v, float):
        return "f"
    if isinstance(v, complex):
        return "c"
    torch = torch_module()
    if torch is not None and isinstance(v, torch.Tensor):
        if v.is_complex():
            return "c"
        return "f" if v.is_floating_point() else "b" if v.dtype == torch.bool else "i"
    return numpy.asarray(v).dtype.kind


def _not_real(v):
    """Why ``v`` cannot be a primal, or None."""
    if isinstance(v, Tensor):
        return None
    if not isinstance(v, complex) and not is_numeric(v):
        return (f"is a {type(v).__name__}; pass numbers, NumPy arrays, torch tensors or "
                "symbolic Tensors (sg.symbol)")
    kind = _dtype_kind(v)
    if kind == "c":
        return ("is complex: symgrad differentiates real functions (complex-valued ones are "
                "refused); pass the real and imaginary parts as two real primals")
    if kind not in "biuf":
        return (f"has dtype {numpy.asarray(v).dtype}; pass real numbers (float, int or bool)")
    return None


def _check_arity(f, what, n):
    """Python's TypeError for a call of ``f`` with ``n`` primals, as an ArgumentError."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*range(n))
    except TypeError as e:
        names = ", ".join(sig.parameters)
        raise ArgumentError(f"{what}: f({names}) cannot be called with {n} primal(s): {e}. "
                            "Give one primal per positional parameter of f") from None


class Primals:
    """The primals of a transform, their placeholders, and how results go back: substituted
    (symbolic primals) or computed by compiled code and returned as the primals' kind.
    Integer and bool primals outside ``differentiated`` (positions; None: all) are inputs
    of their kind, so they can index, as torch.func's non-differentiated arguments."""

    plan: Any = None        # the cached trace and compiled code for this signature
    tangents: Any = None    # a jvp's tangents, as given
    ids: dict[int, str] = {}  # position -> "int64" or "bool" for id and mask primals

    def __init__(self, f, what, primals, differentiated=None):
        self.what = what
        self.values = list(primals)
        self.f = f
        for i, v in enumerate(self.values):
            problem = _not_real(v)
            if problem is not None:
                names = _param_names(f, len(primals))
                raise ArgumentError(f"{what}: primal {i} ({names[i]}) {problem}")
        _check_arity(f, what, len(self.values))
        torch = torch_module()
        if any(isinstance(v, Tensor) for v in self.values):
            self.kind = "symbolic"
        elif torch is not None and any(isinstance(v, torch.Tensor) for v in self.values):
            self.kind = "torch"
        else:
            self.kind = "numpy"
        self.plain = all(isinstance(v, (int, float)) for v in self.values)
        if self.kind != "symbolic" and differentiated is not None:
            self.ids = {i: "bool" if _dtype_kind(v) == "b" else "int64"
                        for i, v in enumerate(self.values)
                        if i not in differentiated and _dtype_kind(v) in "biu"}
        self.plan = None

    def bind(self):
        """Placeholders for the primals (one symbol each, shaped like it) and a new plan."""
        names = _param_names(self.f, len(self.values))
        self.placeholders = [placeholder(f"p_{n}_", _placeholder_spec(v, self.ids.get(i)))
                             for i, (n, v) in enumerate(zip(names, self.values))]
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
        for i, v in enumerate(values):
            if i in self.ids:
                pass
            elif isinstance(v, bool) or isinstance(v, int):
                v = float(v)
            elif torch is not None and isinstance(v, torch.Tensor) and not v.is_floating_point():
                v = v.to(torch.float64)
            elif isinstance(v, numpy.ndarray) and not numpy.issubdtype(v.dtype, numpy.floating):
                v = v.astype(float)
            out.append(v)
        return out

    @staticmethod
    def like(values, refs):
        """``values`` (tangents, cotangents) in the float dtype of ``refs`` (the primals,
        the outputs) where both are float arrays or tensors, as torch.func takes them: a
        float64 cotangent of a float32 output gives float32 gradients."""
        torch = torch_module()
        out = []
        for v, r in zip(values, refs):
            if torch is not None and isinstance(v, torch.Tensor) and isinstance(
                    r, torch.Tensor) and v.is_floating_point() and r.is_floating_point():
                v = v.to(r.dtype)
            elif isinstance(r, (numpy.ndarray, numpy.generic)) and r.dtype.kind == "f" and (
                    isinstance(v, (numpy.ndarray, numpy.generic)) and v.dtype.kind == "f"):
                v = numpy.asarray(v, dtype=r.dtype)
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
            problem = _not_real(v)
            if problem is not None:
                raise ArgumentError(f"{self.what}: {what}[{i}] {problem}")
            if isinstance(v, Tensor) and self.kind != "symbolic":
                raise ArgumentError(f"{self.what}: {what}[{i}] is a symbolic Tensor but the "
                                    f"primals are numbers; give numeric {what}, or symbolic "
                                    "primals (sg.symbol) for a symbolic result")
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
