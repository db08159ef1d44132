"""Evaluating the views a person reads, independently of the compiled code, so they can
be checked against it (``g.verify()``, and the tests' harness).

``evaluate_formula`` computes a formula (``g.formulas[k]``, a SymPy object) with SymPy
alone: the dims are substituted, every input symbol is replaced by an explicit matrix of
its values, ``doit()`` computes, and the result is read off as floats. ``explicit`` forms
are evaluated the same way, element by element. Nothing here runs the generated code.
"""
import functools
import operator
import warnings
from typing import Any

import numpy
import sympy
from sympy.matrices.expressions import (
    HadamardProduct, Identity, MatAdd, MatMul, MatrixExpr, MatrixSymbol, OneMatrix, ZeroMatrix)
from .arrays import array_symbol
from sympy.utilities.exceptions import SymPyDeprecationWarning

from ..core.deep import deep
from .forms import flat



def _number(t, kind):
    if kind == "b":
        return sympy.true if t else sympy.false
    if kind in "iu":
        return sympy.Integer(int(t))
    return sympy.Float(float(t), 17)


def _explicit_value(leaf, value):
    """An input's values as SymPy numbers (booleans and integers kept as such)."""
    v = numpy.asarray(value)
    kind = v.dtype.kind if v.dtype.kind in "biu" else "f"
    elements = [_number(t, kind) for t in v.ravel()]
    if isinstance(leaf, MatrixSymbol):
        rows, cols = (int(d) for d in leaf.shape)
        return sympy.ImmutableMatrix(rows, cols, elements)
    if isinstance(leaf, array_symbol()):
        return sympy.ImmutableDenseNDimArray(elements, v.shape)
    return elements[0]


def _name(leaf):
    return str(leaf.name)


def evaluate_formula(expr, values, dims=None, depth=None):
    """The float64 array ``expr`` computes with ``values`` ({input name: array}) and
    ``dims`` ({dim symbol: size}), by SymPy alone; a column n×1 reads as shape (n,)."""
    def run():
        e = sympy.sympify(expr)
        if dims:
            e = e.xreplace({d: sympy.Integer(v) for d, v in dims.items()})
        leaves = [a for a in e.atoms(MatrixSymbol, array_symbol(), sympy.Symbol)
                  if _name(a) in values
                  and isinstance(a, sympy.Symbol) == (numpy.ndim(values[_name(a)]) == 0)]
        e = e.xreplace({a: _explicit_value(a, values[_name(a)]) for a in leaves})
        e = computed(e)
        if isinstance(e, MatrixExpr) and not isinstance(e, sympy.MatrixBase):
            e = e.as_explicit()
        if isinstance(e, (sympy.MatrixBase, sympy.NDimArray)):
            return numpy.array([_float(t) for t in flat(e)], dtype=numpy.float64).reshape(
                e.shape)
        return numpy.array(_float(e))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SymPyDeprecationWarning)
        return deep(run, depth or max(200, _depth(expr)))


def _float(e):
    e = sympy.sympify(e)
    if e is sympy.true or e is sympy.false:
        return float(bool(e))
    value = sympy.N(e, 17)
    if value.is_real is False and value.has(sympy.zoo) or value == sympy.zoo:
        return numpy.nan
    try:
        return float(value)
    except TypeError:
        if value.has(sympy.nan):
            return numpy.nan
        if value.is_number and value.is_real is False:
            return numpy.nan    # a negative base to a fractional power: NumPy's nan
        raise


def replaced(expr, mapping, memo=None):
    """``expr.xreplace(mapping)`` over the DAG: each distinct subexpression is rebuilt once
    (``memo``, shared between calls, keeps the results). SymPy's xreplace walks the tree,
    and a per-element form repeats its subterms (every element of a solve against a
    Cholesky factor holds every element of the factor): 34 million visits for a 3×3 one."""
    memo = {} if memo is None else memo
    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if node in memo:
            continue
        if node in mapping:
            memo[node] = mapping[node]
            continue
        args = node.args
        if not args:
            memo[node] = node
            continue
        if not ready:
            stack.append((node, True))
            stack.extend((a, False) for a in args if a not in memo)
            continue
        new = tuple(memo[a] for a in args)
        if isinstance(node, sympy.core.relational.Relational):
            # a comparison with an opaque element (a singular value) is decided numerically
            new = tuple(a.evalf(20) if getattr(a, "is_number", False) else a for a in new)
        memo[node] = node.func(*new) if any(n is not a for n, a in zip(new, args)) else node
    return memo[expr]


def as_graph_shape(value, shape):
    """An evaluated formula (a column for a vector) in the graph's shape."""
    return numpy.asarray(value, dtype=numpy.float64).reshape(shape)


def _depth(expr):
    """How deep ``expr`` nests (SymPy evaluates it recursively), counted iteratively."""
    best, stack, seen = 0, [(expr, 1)], set()
    while stack:
        e, d = stack.pop()
        best = max(best, d)
        for a in getattr(e, "args", ()):
            if id(a) not in seen:
                seen.add(id(a))
                stack.append((a, d + 1))
    return best


def computed(expr):
    """``expr`` with every subexpression computed, inputs first (a post-order
    ``doit``): SymPy's own ``doit`` leaves a product of explicit matrices unevaluated when
    the matrices only became explicit below it."""
    memo = {}
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in memo:
            continue
        args = getattr(e, "args", ())
        if not ready and args and isinstance(e, sympy.Basic):
            stack.append((e, True))
            stack.extend((a, False) for a in args if id(a) not in memo)
            continue
        new = _special_explicit(e)
        if new is e and args and isinstance(e, sympy.Basic) \
                and not isinstance(e, sympy.MatrixBase):
            new_args = tuple(_special_explicit(memo.get(id(a), a)) for a in args)
            if any(n is not a for n, a in zip(new_args, args)):
                new = e.func(*new_args)
            if not isinstance(new, (sympy.Lambda, sympy.Tuple)):
                new = _special_explicit(_explicit(new.doit(deep=False)))
        memo[id(e)] = new
    return memo[id(expr)]


def _special_explicit(e):
    """I, 0 and 𝟙 of a concrete size as explicit matrices (SymPy's ``doit`` keeps them
    symbolic, and then cannot apply a function elementwise to them)."""
    if isinstance(e, (Identity, ZeroMatrix, OneMatrix)) and all(
            sympy.sympify(d).is_Integer for d in e.shape):
        return e.as_explicit()
    return e


def _explicit(e):
    """A product, sum or Hadamard product of explicit matrices and numbers, computed
    (SymPy's ``doit`` keeps one whose coefficient is not a plain number)."""
    if not isinstance(e, (MatMul, MatAdd, HadamardProduct)) or any(
            isinstance(a, MatrixExpr) and not isinstance(a, sympy.MatrixBase) for a in e.args):
        return e
    if isinstance(e, MatMul):
        return functools.reduce(operator.mul, e.args)
    if isinstance(e, MatAdd):
        return functools.reduce(operator.add, e.args)
    return functools.reduce(lambda a, b: a.multiply_elementwise(b), e.args)


class ViewReport:
    """What ``g.verify()`` found: one row per view and block, (view, key, error or
    None, note). True when every evaluated view agrees with the compiled code."""

    def __init__(self, rows, dims):
        self.rows = rows
        self.dims = dims

    @property
    def ok(self):
        return all(err is None or err <= 0 for _, _, err, note in self.rows if note is None)

    def __bool__(self):
        return self.ok

    @property
    def differing(self):
        """[(view, key)] of the views that disagree with the compiled code."""
        return [(v, k) for v, k, err, note in self.rows
                if note is None and err is not None and err > 0]

    def __str__(self):
        dims = ", ".join(f"{k}={v}" for k, v in self.dims.items()) or "no dims"
        head = ("every view agrees with the compiled code" if self.ok else
                "views that differ from the compiled code: " +
                ", ".join(f"{v} of d/d{k}" for v, k in self.differing))
        lines = [f"{head} (at {dims}, random inputs)"]
        for view, key, err, note in self.rows:
            state = note or ("ok" if err is not None and err <= 0 else "DIFFERS")
            lines.append(f"  {view:9} d/d{key}: {state}")
        return "\n".join(lines)

    __repr__ = __str__


def agreement(got, want, rtol, atol):
    """0 when ``got`` equals ``want`` to the tolerances, else the largest excess."""
    got = numpy.asarray(got, dtype=numpy.float64).reshape(numpy.shape(want))
    want = numpy.asarray(want, dtype=numpy.float64)
    both_nan = numpy.isnan(got) & numpy.isnan(want)
    excess = numpy.abs(got - want) - (atol + rtol * numpy.abs(want))
    excess = numpy.where(both_nan, 0.0, numpy.nan_to_num(excess, nan=numpy.inf))
    return float(max(excess.max(initial=0.0), 0.0))


def verify_views(blocks, inputs, compiled, formulas, explicit, dims, values, rtol=1e-7,
                 atol=1e-9, max_elements=64):
    """Rows of a ``ViewReport``: the formulas (by SymPy) and the per-element forms of
    each block, evaluated at ``values`` ({input name: array}) and ``dims`` ({dim symbol:
    size}), against ``compiled`` (the compiled results, one per block)."""
    rows = []
    for block, want in zip(blocks, compiled):
        try:
            got = evaluate_formula(formulas[block.key], values, dims)
            rows.append(("formulas", block.key, agreement(got, want, rtol, atol), None))
        except Exception as e:  # noqa: BLE001 - a view that cannot be evaluated is reported
            rows.append(("formulas", block.key, None, f"cannot evaluate ({type(e).__name__})"))
    size = sum(int(numpy.size(v)) for v in values.values())
    if size > max_elements:
        rows += [("explicit", b.key, None, f"skipped ({size} input elements > {max_elements})")
                 for b in blocks]
        return rows
    try:
        forms = explicit()
    except Exception as e:  # noqa: BLE001
        return rows + [("explicit", b.key, None, f"cannot build ({type(e).__name__})")
                       for b in blocks]
    names = _element_values(inputs, values, dims)
    for block, want in zip(blocks, compiled):
        form = forms[block.key]
        elements = flat(form) if isinstance(form, (sympy.MatrixBase, sympy.NDimArray)) \
            else [form]
        memo: dict[Any, Any] = {}
        try:
            got = [_float(replaced(sympy.sympify(e), names, memo)) for e in elements]
        except Exception as e:  # noqa: BLE001 - a view that cannot be evaluated is reported
            rows.append(("explicit", block.key, None, f"cannot evaluate ({type(e).__name__})"))
            continue
        rows.append(("explicit", block.key, agreement(got, want, rtol, atol), None))
    return rows


def _element_values(inputs, values, dims=()):
    """{element symbol of ``explicit``: its value} for every input."""
    from .explicit import input_elements
    arrays = {x.name: numpy.asarray(values[x.name]) for x in inputs}
    symbols = input_elements([(x.name, arrays[x.name].shape) for x in inputs],
                             {str(d) for d in dims})
    out = {}
    for x in inputs:
        v = arrays[x.name]
        for s, t in zip(symbols[x.name].ravel(), v.ravel()):
            out[s] = _number(t, v.dtype.kind if v.dtype.kind in "biu" else "f")
    return out
