"""Function transforms with ``torch.func``'s conventions: ``vjp``, ``jvp``, ``jacobian``,
``hessian`` and ``hvp``.

Each transform traces ``f`` once on placeholder symbols, one per primal and shaped like
it, and builds the derivative as a graph over them:

* ``vjp``: one reverse sweep (``diff.reverse.backward``) seeded with cotangent placeholders;
* ``jvp``: one forward sweep (``diff.forward.forward``) with the rules' JVP formulas, never a
  transposed VJP;
* ``jacobian``: a VJP (reverse mode, the rows) or JVP (forward mode, the columns) traced
  on a placeholder and batched over the identity (``batching``), one graph for the whole
  matrix; reverse mode when the outputs have no more elements than the inputs;
* ``hessian``: the forward-mode Jacobian of the reverse-mode gradient;
* ``hvp``: a forward sweep over the reverse-mode gradient.

Then the placeholders meet the primals. Symbolic Tensors are substituted into the graph
(so the results are symbolic Tensors, differentiable again); numbers, NumPy arrays and
torch tensors are passed to the graph compiled for NumPy or torch, and the results come
back as the same kind of value. Without primals, ``jacobian(f, shapes=...)`` and
``hessian(f, shapes=...)`` return ``Jacobian`` / ``Hessian`` objects with the views of
``GradFn``: formulas, matrix-notation text, LaTeX, program, compile and source.
"""
from typing import Any, Callable, Sequence

from ..core import grad_mode
from ..core.build import as_tensor, const, naming_captures, torch_module
from ..core.graph import Tensor
from ..core.shapes import fmt_shape
from ..core.types import Shapes, TensorLike, Wrt
from ..diff.batching import jacfwd, jacobian_blocks, jacrev, placeholder, reverse_is_cheaper
from ..diff.forward import forward
from ..diff.reverse import backward
from ..errors import ArgumentError, NonScalarOutputError, SymgradError
from ..views.latex import latex_name
from .derivative import Block, DerivativeFn
from .grad import input_text, make_inputs, positional, resolve_wrt
from .primals import Primals, _shape_of, flatten, unflatten

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "Jacobian", "Hessian"]

# Transforms build derivative graphs with gradients enabled whatever the outer mode, as
# torch.func's do: under sg.no_grad every node would be detached and every derivative 0.
_grad_enabled = grad_mode.enable_grad()


def _as_tuple(x):
    if isinstance(x, (tuple, list)):
        return list(x), True
    return [x], False


def _selection(argnums, wrt, n, what):
    """(positions, single) from torch.func's ``argnums`` or grad_fn's ``wrt`` (positions)."""
    if argnums is not None and wrt is not None:
        raise SymgradError(f"{what}: give argnums or wrt, not both")
    sel = argnums if argnums is not None else wrt
    if sel is None:
        sel = 0
    single = not isinstance(sel, (tuple, list))
    items = [sel] if single else list(sel)
    if not items:
        raise SymgradError(f"{what}: argnums must not be empty")
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, int):
            raise SymgradError(f"{what}: argnums must be ints (positions of the primals) or a "
                               f"tuple of ints, got {a!r}")
        if not -n <= a < n:
            raise SymgradError(f"{what}: argnums={a} is out of range for {n} primal(s)")
        out.append(a % n)
    return out, single


def _no_primals(what, kind):
    raise SymgradError(f"{what} needs primals: {what}(f, x, ...). For the {kind} as formulas "
                       f"without values, use sg.{kind}(f, shapes={{...}})")


# ----- vjp and jvp ---------------------------------------------------------------------------

@_grad_enabled
def vjp(f: Callable[..., Any], *primals: TensorLike,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, vjp_fn)`` like ``torch.func.vjp``: ``vjp_fn(cotangents)`` returns one
    gradient per primal (a tuple), for cotangents shaped like the output (a tuple of them
    when ``f`` returns a tuple). With ``has_aux``: ``(output, vjp_fn, aux)``."""
    if not primals:
        _no_primals("sg.vjp", "jacobian")
    p = Primals(f, "sg.vjp", primals)
    return p.cached(("vjp",), lambda: _vjp_plan(p, has_aux), has_aux)


def _vjp_plan(p, has_aux):
    outs, spec, aux = p.trace(p.f, has_aux)
    out_shapes = [o.shape for o in outs]
    cts = [placeholder("ct", s) for s in out_shapes]
    grads = backward(outs, cts, p.placeholders)
    shapes = [x.shape for x in p.placeholders]

    def finish(q):
        out_leaves = q.results(outs, out_shapes)
        out_values = unflatten(spec, out_leaves)

        @_grad_enabled
        def vjp_fn(cotangents):
            flat, cspec = flatten(cotangents)
            if cspec != spec and not (spec is None and len(flat) == 1):
                how = (f"got {len(flat)} value(s)" if len(flat) != len(outs) else
                       "got as many values in another structure (dict keys in another "
                       "order, a list for a tuple)")
                raise ArgumentError(f"sg.vjp: the cotangents must have the structure of the "
                                    f"output ({len(outs)} value(s)), {how}")
            q.check_like(flat, "cotangents", out_shapes)
            return tuple(q.results(grads, shapes, cts, q.like(flat, out_leaves)))

        vjp_fn.__doc__ = "The vector-Jacobian product at the primals: one gradient per primal."
        result = (out_values, vjp_fn)
        return result + (_aux(q, aux),) if has_aux else result
    return finish


def _with_tangents(f, primals, tangents, what, alternative):
    """(Primals, tangents, whether the primals were a tuple), tangents checked one per
    primal and of its shape (jvp, hvp)."""
    prim, is_tuple = _as_tuple(primals)
    tans, _ = _as_tuple(tangents)
    if not prim:
        _no_primals(what, alternative)
    p = Primals(f, what, prim)
    if len(tans) != len(prim):
        raise SymgradError(f"{what}: {len(prim)} primal(s) but {len(tans)} tangent(s); give "
                           "one tangent per primal, of its shape")
    p.check_like(tans, "tangents", [_shape_of(v) for v in p.values])
    p.tangents = tans
    return p, tans, is_tuple


@_grad_enabled
def jvp(f: Callable[..., Any], primals: TensorLike | Sequence[TensorLike],
        tangents: TensorLike | Sequence[TensorLike], *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, tangent_out)`` like ``torch.func.jvp``: the Jacobian of ``f`` at
    ``primals`` times ``tangents`` (tuples, one tangent per primal, of its shape), by one
    forward sweep with the rules' JVP formulas. With ``has_aux``: ``(output, tangent_out,
    aux)``. ``strict`` is accepted for compatibility. A symmetric primal (a symbol declared
    ``symmetric=True``) moves along symmetric directions only: its tangent V acts as
    (V + Vᵀ)/2, as in ``torch.func.jvp`` of f((X + Xᵀ)/2)."""
    p, tans, _ = _with_tangents(f, primals, tangents, "sg.jvp", "jacobian")
    return p.cached(("jvp",), lambda: _jvp_plan(p, has_aux), has_aux)


def _jvp_plan(p, has_aux):
    outs, spec, aux = p.trace(p.f, has_aux)
    tph = [placeholder("tan", x.shape) for x in p.placeholders]
    touts = forward(outs, p.placeholders, tph)
    shapes = [o.shape for o in outs]

    def finish(q):
        values = q.results(outs + touts, shapes + shapes, tph, q.like(q.tangents, q.values))
        result = (unflatten(spec, values[:len(outs)]), unflatten(spec, values[len(outs):]))
        return result + (_aux(q, aux),) if has_aux else result
    return finish


def _aux(p, aux):
    leaves, spec = flatten(aux)
    kinds = [i for i, a in enumerate(leaves) if isinstance(a, Tensor)]
    if not kinds:
        return aux
    nodes = [leaves[i] for i in kinds]
    values = p.results(nodes, [n.shape for n in nodes])
    for i, v in zip(kinds, values):
        leaves[i] = v
    return unflatten(spec, leaves)


# ----- Jacobians and Hessians at primals ----------------------------------------------------

@_grad_enabled
def jacobian(f: Callable[..., Any], *primals: TensorLike,
             argnums: int | tuple[int, ...] | None = None, wrt: Wrt = None,
             shapes: Shapes | None = None, mode: str = "auto", has_aux: bool = False) -> Any:
    """The Jacobian of ``f``. With primals (``torch.func.jacrev(f, argnums)(*primals)``):
    for each output, the Jacobian w.r.t. ``primals[argnums]`` (shape output + input; a
    tuple of them when ``argnums`` is a tuple), as the primals' kind of value. Without
    primals: a ``Jacobian`` object of ``f`` traced on symbols shaped by ``shapes`` (or
    annotations), w.r.t. ``wrt`` (names or positions; default every parameter), with
    ``GradFn``'s views. ``mode``: "reverse", "forward" or "auto" (by shape)."""
    if not primals:
        return Jacobian(f, wrt=wrt if argnums is None else argnums, shapes=shapes, mode=mode,
                        has_aux=has_aux)
    if shapes is not None:
        raise SymgradError("sg.jacobian: shapes= is for the symbolic object "
                           "sg.jacobian(f, shapes=...); with primals their shapes are used")
    sel, single = _selection(argnums, wrt, len(primals), "sg.jacobian")
    p = Primals(f, "sg.jacobian", primals, differentiated=sel)
    return p.cached(("jacobian", tuple(sel), single, mode),
                    lambda: _jacobian_plan(p, sel, single, mode, has_aux), has_aux)


def _jacobian_plan(p, sel, single, mode, has_aux):
    outs, spec, aux = p.trace(p.f, has_aux)
    xs = [p.placeholders[i] for i in sel]
    blocks = jacobian_blocks(outs, xs, mode)
    flat = [b for row in blocks for b in row]
    shapes_ = [o.shape + x.shape for o in outs for x in xs]
    n, m = len(outs), len(xs)

    def finish(q):
        values = q.results(flat, shapes_)
        per_out = [values[k * m:(k + 1) * m] for k in range(n)]
        result = unflatten(spec, [row[0] if single else tuple(row) for row in per_out])
        return (result, _aux(q, aux)) if has_aux else result
    return finish


def _hessian_blocks(outs, xs):
    """``h[k][i][j]``: d/dxs[j] of the reverse-mode Jacobian d outs[k] / d xs[i]
    (forward over reverse)."""
    rev = jacrev(outs, xs)
    flat = [b for row in rev for b in row]
    live = [b for b in flat if b is not None]
    fwd = iter(jacfwd(live, xs)) if live else iter(())
    h = []
    for row in rev:
        h.append([[None] * len(xs) if b is None else next(fwd) for b in row])
    return h


@_grad_enabled
def hessian(f: Callable[..., Any], *primals: TensorLike,
            argnums: int | tuple[int, ...] | None = None, wrt: Wrt = None,
            shapes: Shapes | None = None, has_aux: bool = False) -> Any:
    """The Hessian of ``f``, forward over reverse (``torch.func.hessian``). With primals:
    for each output, the Hessian w.r.t. ``primals[argnums]`` (shape output + input +
    input; nested tuples ``H[i][j]`` when ``argnums`` is a tuple). Without primals: a
    ``Hessian`` object with ``GradFn``'s views, w.r.t. ``wrt`` (default every parameter)."""
    if not primals:
        return Hessian(f, wrt=wrt if argnums is None else argnums, shapes=shapes,
                       has_aux=has_aux)
    if shapes is not None:
        raise SymgradError("sg.hessian: shapes= is for the symbolic object "
                           "sg.hessian(f, shapes=...); with primals their shapes are used")
    sel, single = _selection(argnums, wrt, len(primals), "sg.hessian")
    p = Primals(f, "sg.hessian", primals, differentiated=sel)
    return p.cached(("hessian", tuple(sel), single),
                    lambda: _hessian_plan(p, sel, single, has_aux), has_aux)


def _hessian_plan(p, sel, single, has_aux):
    outs, spec, aux = p.trace(p.f, has_aux)
    xs = [p.placeholders[i] for i in sel]
    h = _hessian_blocks(outs, xs)
    flat = [b for out in h for row in out for b in row]
    shapes_ = [o.shape + a.shape + b.shape for o in outs for a in xs for b in xs]
    n, m = len(outs), len(xs)

    def finish(q):
        it = iter(q.results(flat, shapes_))
        per_out = []
        for _ in range(n):
            rows = tuple(tuple(next(it) for _ in range(m)) for _ in range(m))
            per_out.append(rows[0][0] if single else rows)
        result = unflatten(spec, per_out)
        return (result, _aux(q, aux)) if has_aux else result
    return finish


@_grad_enabled
def hvp(f: Callable[..., Any], primals: TensorLike | Sequence[TensorLike],
        tangents: TensorLike | Sequence[TensorLike]) -> tuple[Any, Any]:
    """``(output, hvp)`` like ``torch.autograd.functional.hvp``: the Hessian of scalar
    ``f`` at ``primals`` times ``tangents``, one result per primal (a tuple when the
    primals are), by a forward sweep over the reverse-mode gradient."""
    p, tans, is_tuple = _with_tangents(f, primals, tangents, "sg.hvp", "hessian")
    return p.cached(("hvp", is_tuple), lambda: _hvp_plan(p, is_tuple))


def _hvp_plan(p, is_tuple):
    outs, spec, _ = p.trace(p.f)
    if spec is not None or outs[0].shape:
        shape = "several outputs" if spec is not None else f"shape {fmt_shape(outs[0].shape)}"
        raise NonScalarOutputError(f"sg.hvp: f returns {shape}; a Hessian-vector product "
                                   "needs a scalar output. Use sg.hessian, or sg.jvp of "
                                   "a sg.vjp, for non-scalar outputs")
    grads = backward(outs, [const(1)], p.placeholders)
    live = [g for g in grads if g is not None]
    tph = [placeholder("tan", x.shape) for x in p.placeholders]
    hv = iter(forward(live, p.placeholders, tph))
    nodes = [None if g is None else next(hv) for g in grads]
    shapes = [x.shape for x in p.placeholders]
    nodes = outs + nodes
    shapes = [outs[0].shape] + shapes

    def finish(q):
        values = q.results(nodes, shapes, tph, q.like(q.tangents, q.values))
        out, rest = values[0], values[1:]
        return out, (tuple(rest) if is_tuple else rest[0])
    return finish


# ----- Jacobian and Hessian objects ------------------------------------------------------------

def _out_label(name, k, several):
    return f"{name}[{k}]" if several else name


def _latex_name(name):
    return latex_name(name)


def _latex_out(name, k, several):
    base = _latex_name(name)
    return f"{base}_{{{k}}}" if several else base


class _Transformed(DerivativeFn):
    """The shared part of ``Jacobian`` and ``Hessian``: ``f`` traced on symbols."""

    kind = "derivative"

    def __init__(self, f, wrt, shapes, has_aux):
        f = positional(f)
        name = getattr(f, "__name__", "f")
        self.name = "f" if name == "<lambda>" else name
        self.inputs = make_inputs(f, shapes)
        with naming_captures(f):
            out = f(*self.inputs)
        if has_aux:
            out = out[0]
        leaves, self.spec = flatten(out)
        self.outputs = [as_tensor(o, self.name) for o in leaves]
        self.output = self.outputs[0] if self.spec is None else None
        if isinstance(wrt, (tuple, list)):
            self.single = False
        else:
            self.single = wrt is not None or len(self.inputs) == 1
        self.wrt = resolve_wrt(wrt, self.inputs, self.name)
        self._compiled = {}

    def _structure(self, values: list[Any]) -> list[Any]:
        """The flat blocks grouped as calling the object returns them (per subclass)."""
        raise NotImplementedError

    @property
    def several(self):
        return self.spec is not None

    def _values(self):
        return [(_out_label(self.name, k, self.several), o) for k, o in enumerate(self.outputs)]

    @property
    def value(self):
        """Closed form of the function (a list of them when it has several outputs)."""
        if self.several:
            return [o.expr for o in self.outputs]
        return self.outputs[0].expr

    def _key(self, k, names):
        parts = ([k] if self.several else []) + list(names)
        return parts[0] if len(parts) == 1 else tuple(parts)

    def _matrix_view(self):
        return True if any(x.shape for x in self.inputs) else super()._matrix_view()

    def __repr__(self):
        args = ", ".join(input_text(x) for x in self.inputs)
        wrt = ", ".join(x.name for x in self.wrt)
        return f"<{type(self).__name__} of {self.name}({args}) w.r.t. {wrt}>\n{self}"

    def __call__(self, *args: TensorLike) -> Any:
        """The derivative at ``args`` (numbers, arrays or torch tensors), structured like
        ``torch.func``'s result: per output, one block (a single ``wrt``) or a tuple."""
        if len(args) != len(self.inputs):
            raise SymgradError(f"{type(self).__name__} of {self.name} takes "
                               f"{len(self.inputs)} argument(s) "
                               f"({', '.join(f'{x.name}' for x in self.inputs)}), got {len(args)}")
        p = Primals.__new__(Primals)
        p.what, p.values = f"{type(self).__name__} of {self.name}", list(args)
        torch = torch_module()
        p.kind = "torch" if torch is not None and any(
            isinstance(a, torch.Tensor) for a in args) else "numpy"
        p.plain = all(isinstance(a, (int, float)) for a in args)
        values = [p._convert(v) for v in super().compile(p.kind)(*p._args(args))]
        return unflatten(self.spec, self._structure(values))

    def compile(self, backend: str = "numpy", with_value: bool = False) -> Callable[..., Any]:
        """A plain function of ``f``'s arguments returning the blocks in the same nested
        layout as calling this object (``H[i][j]`` per output, as ``torch.func``), or
        ``(value, blocks)``; it runs NumPy or torch code only."""
        flat = super().compile(backend, with_value)
        structure, spec = self._structure, self.spec
        if spec is None and self.single and not with_value:
            def single(*args):      # one output, one block: no structure to rebuild
                return flat(*args)[0]
            single.__name__, single.__doc__ = flat.__name__, flat.__doc__
            return single

        def nested(*args):
            result = flat(*args)
            if with_value:
                value, blocks = result
                return value, unflatten(spec, structure(list(blocks)))
            return unflatten(spec, structure(list(result)))
        nested.__name__ = flat.__name__
        nested.__doc__ = flat.__doc__
        return nested


    def source(self, backend: str = "numpy", with_value: bool = False) -> str:
        """Standalone source of ``compile(backend)``: the blocks in the same nested layout
        as calling this object (a function over the flat one the code generator prints)."""
        flat = super().source(backend, with_value)
        name = self._func_name()
        count = len(self._blocks())
        layout = unflatten(self.spec, self._structure(list(range(count))))
        if self.spec is None and self.single and not with_value:
            layout = 0
        body = _layout_text(layout)
        flat = flat.replace(f"def {name}(", f"def _{name}_flat(", 1)
        result = f"_v, ({body})" if with_value else body
        unpack = "_v, _r" if with_value else "_r"
        return (flat.rstrip("\n") + f"\n\n\ndef {name}(*args):\n"
                f"    {unpack} = _{name}_flat(*args)\n    return {result}\n")


def _layout_text(layout):
    """Python text rebuilding a nest of tuples, lists and dicts of block indices from the
    flat result ``_r``."""
    if isinstance(layout, int):
        return f"_r[{layout}]"
    if isinstance(layout, dict):
        return "{" + ", ".join(f"{k!r}: {_layout_text(v)}" for k, v in layout.items()) + "}"
    items = [_layout_text(v) for v in layout]
    if isinstance(layout, list):
        return "[" + ", ".join(items) + "]"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


class Jacobian(_Transformed):
    """The Jacobian of ``f`` as formulas, matrix-notation text, LaTeX, a program and
    compiled code (``sg.jacobian(f, shapes=...)``). Block ``d f/d x`` has shape
    ``f.shape + x.shape``; ``compile`` returns one block per (output, wrt) pair."""

    @_grad_enabled
    def __init__(self, f: Callable[..., Any], wrt: Wrt = None, shapes: Shapes | None = None,
                 mode: str = "auto", has_aux: bool = False) -> None:
        super().__init__(f, wrt, shapes, has_aux)
        if mode == "auto":
            mode = "reverse" if reverse_is_cheaper(self.outputs, self.wrt) else "forward"
        self.mode = mode
        self.blocks = jacobian_blocks(self.outputs, self.wrt, mode)

    def _blocks(self):
        out = []
        for k, (o, row) in enumerate(zip(self.outputs, self.blocks)):
            name = _out_label(self.name, k, self.several)
            tex = _latex_out(self.name, k, self.several)
            for x, b in zip(self.wrt, row):
                out.append(Block(self._key(k, [x.name]), f"d{name}/d{x.name}",
                                 rf"\frac{{\partial {tex}}}{{\partial {_latex_name(x.name)}}}",
                                 b, o.shape + x.shape))
        return out

    def _func_name(self):
        return f"jacobian_{self.name if self.name.isidentifier() else 'f'}"

    def _structure(self, values):
        n = len(self.wrt)
        rows = [values[k * n:(k + 1) * n] for k in range(len(self.outputs))]
        return [r[0] if self.single else tuple(r) for r in rows]


class Hessian(_Transformed):
    """The Hessian of ``f`` (forward over reverse) as formulas, matrix-notation text,
    LaTeX, a program and compiled code (``sg.hessian(f, shapes=...)``). Block
    ``d²f/dx dy`` has shape ``f.shape + x.shape + y.shape``; the Hessian of a scalar
    function of a vector prints as a matrix formula (``Wᵀ diag(…) W``). W.r.t. a symmetric
    input (``sg.TensorSpec(..., symmetric=True)``) it is the Hessian on symmetric matrices:
    the derivative of the symmetric gradient along symmetric directions, which is
    ``torch.func.hessian`` of f((X + Xᵀ)/2)."""

    @_grad_enabled
    def __init__(self, f: Callable[..., Any], wrt: Wrt = None, shapes: Shapes | None = None,
                 has_aux: bool = False) -> None:
        super().__init__(f, wrt, shapes, has_aux)
        self.blocks = _hessian_blocks(self.outputs, self.wrt)

    def _blocks(self):
        out = []
        for k, (o, rows) in enumerate(zip(self.outputs, self.blocks)):
            name = _out_label(self.name, k, self.several)
            tex = _latex_out(self.name, k, self.several)
            for i, x in enumerate(self.wrt):
                for j, y in enumerate(self.wrt):
                    if x is y:
                        label = f"d²{name}/d{x.name}²"
                        ltx = rf"\frac{{\partial^2 {tex}}}{{\partial {_latex_name(x.name)}^2}}"
                    else:
                        label = f"d²{name}/d{x.name}d{y.name}"
                        ltx = (rf"\frac{{\partial^2 {tex}}}{{\partial {_latex_name(x.name)}"
                               rf" \partial {_latex_name(y.name)}}}")
                    key = self._key(k, [x.name] if self.single else [x.name, y.name])
                    out.append(Block(key, label, ltx, rows[i][j], o.shape + x.shape + y.shape))
        return out

    def _func_name(self):
        return f"hessian_{self.name if self.name.isidentifier() else 'f'}"

    def _structure(self, values):
        n = len(self.wrt)
        it = iter(values)
        out = []
        for _ in self.outputs:
            rows = tuple(tuple(next(it) for _ in range(n)) for _ in range(n))
            out.append(rows[0][0] if self.single else rows)
        return out
