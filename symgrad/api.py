"""The user-facing entry points: tracing Python functions, ``grad_fn`` and ``grad``.

``grad_fn(f)`` traces ``f`` on symbols (one per parameter, shaped by ``shapes`` or
annotations), differentiates the scalar result in one reverse sweep and returns a
``GradFn``: the gradient as formulas, a program, and compiled NumPy/torch functions.
"""
import ast
import inspect

import sympy

from . import codegen, explicit as _explicit
from .autodiff import backward
from .errors import ArgumentError, NonScalarOutputError, ShapeError, SymgradError
from .grad_mode import enable_grad
from .graph import Tensor, const, gc_paused, symbol, zeros
from .ops import as_tensor
from .printing import (format_expr, latex_expr, program_lines, shape_note, shared_forms)
from .shapes import as_shape, dim_symbols, fmt_shape, shapes_equal


class TensorSpec:
    """The annotation ``sg.Tensor["m", "n"]``: a parameter's shape."""

    def __init__(self, dims):
        self.shape = as_shape(dims if isinstance(dims, tuple) else (dims,))

    def __repr__(self):
        return f"Tensor[{', '.join(map(str, self.shape))}]"


def _tensor_class_getitem(cls, dims):
    return TensorSpec(dims)


Tensor.__class_getitem__ = classmethod(_tensor_class_getitem)


def _annotation_shape(ann):
    if isinstance(ann, TensorSpec):
        return ann.shape
    if isinstance(ann, str):
        # A string annotation (from __future__ annotations): read it, never eval it.
        try:
            node = ast.parse(ann, mode="eval").body
        except SyntaxError:
            return None
        if isinstance(node, ast.Subscript) and getattr(node.value, "attr", getattr(
                node.value, "id", None)) == "Tensor":
            sl = node.slice
            elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            if all(isinstance(e, ast.Constant) for e in elts):
                return as_shape(tuple(e.value for e in elts))
    return None


def parameters(f):
    """Positional parameter names of ``f``."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        raise SymgradError(f"cannot read the parameters of {f!r}; pass a Python function "
                           "or an nn.Module") from None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [p for p in sig.parameters.values() if p.kind in kinds]
    return params


def make_inputs(f, shapes=None):
    """One symbol per parameter of ``f``, shaped by ``shapes`` or annotations."""
    shapes = dict(shapes or {})
    params = parameters(f)
    names = [p.name for p in params]
    unknown = [k for k in shapes if k not in names]
    if unknown:
        raise SymgradError(f"shapes names {unknown} that are not parameters of "
                           f"{getattr(f, '__name__', 'f')}({', '.join(names)})")
    inputs = []
    for p in params:
        if p.name in shapes:
            shape = as_shape(shapes[p.name])
        else:
            shape = _annotation_shape(p.annotation) or ()
        inputs.append(symbol(p.name, shape))
    dims = {str(d) for x in inputs for d in dim_symbols(x.shape)}
    clash = dims & set(names)
    if clash:
        raise SymgradError(f"dim name(s) {sorted(clash)} are also parameter names; "
                           "rename the dims (e.g. 'n' -> 'N')")
    return inputs


def trace(f, inputs):
    out = f(*inputs)
    if isinstance(out, (tuple, list)):
        raise NonScalarOutputError(
            f"{getattr(f, '__name__', 'f')} returns {len(out)} values; grad_fn needs one "
            "scalar; use sg.vjp or sg.jacobian for several outputs")
    return as_tensor(out, "output")


def resolve_wrt(wrt, inputs, fname="f"):
    names = [x.name for x in inputs]
    if wrt is None:
        return list(inputs)
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    out = []
    for w in items:
        if isinstance(w, bool):
            raise SymgradError(f"wrt must name parameters of {fname}, got {w!r}")
        if isinstance(w, int):
            if not -len(inputs) <= w < len(inputs):
                raise SymgradError(f"wrt={w} is out of range: {fname} has {len(inputs)} "
                                   f"parameters ({', '.join(names)})")
            out.append(inputs[w])
        elif isinstance(w, str):
            if w not in names:
                raise SymgradError(f"wrt={w!r} is not a parameter of {fname}"
                                   f"({', '.join(names)})")
            out.append(inputs[names.index(w)])
        else:
            raise SymgradError(f"wrt items are parameter names or positions, got {w!r}")
    return out


def _check_scalar(out, what):
    if out.shape:
        raise NonScalarOutputError(
            f"{what} returns a Tensor of shape {fmt_shape(out.shape)}; a gradient can be "
            "implicitly created only for scalar outputs. Reduce it to a scalar (e.g. "
            "sg.sum), or use sg.vjp / sg.jacobian for non-scalar outputs")


class Block:
    """One result of a derivative view: its key in ``formulas``, its text and LaTeX
    labels, its graph node (None for a known zero) and its shape."""

    __slots__ = ("key", "label", "latex", "node", "shape")

    def __init__(self, key, label, latex, node, shape):
        self.key, self.label, self.latex, self.node, self.shape = key, label, latex, node, shape

    @property
    def filled(self):
        return self.node if self.node is not None else zeros(self.shape)


class DerivativeFn:
    """The views ``GradFn``, ``sg.jacobian`` and ``sg.hessian`` objects share: derivative
    graphs as closed-form formulas, text (matrix or NumPy notation), LaTeX, a
    straight-line program, compiled NumPy/torch functions and their source.

    A subclass sets ``name``, ``inputs`` (the traced parameters, in order), ``output``
    (the traced value, or None when there are several) and implements ``_blocks()``."""

    _compiled = None

    def _blocks(self):
        raise NotImplementedError

    def _values(self):
        """[(label, node)] of the traced value(s) for ``program``."""
        return [(self.name, self.output)]

    # ----- formulas --------------------------------------------------------------------
    @staticmethod
    def _closed(node, shape):
        if node is None:
            return zeros(shape).expr
        return node.expr

    @property
    def formulas(self):
        """{key: closed-form SymPy expression} (the key of a gradient is the input name)."""
        return {b.key: self._closed(b.node, b.shape) for b in self._blocks()}

    @property
    def value(self):
        """Closed-form SymPy expression of the function itself."""
        return self.output.expr

    def _shared(self):
        reserved = {x.name for x in self.inputs}
        return shared_forms([b.filled for b in self._blocks()], reserved)

    def _matrix_view(self):
        """Matrix notation suits any derivative with an array in it; plain SymPy formulas
        (which SymPy simplifies) suit functions of scalars only."""
        return any(x.shape for x in self.inputs) or any(
            v is not None and v.shape for _, v in self._values())

    def _notation(self, notation):
        if notation is None:
            return "matrix" if self._matrix_view() else "numpy"
        if notation not in ("matrix", "numpy"):
            raise ArgumentError(f"unknown notation {notation!r}; use 'matrix' or 'numpy'")
        return notation

    def _rendered(self, style):
        from .matrix_notation import render
        return render([b.filled for b in self._blocks()], style, {x.name for x in self.inputs})

    def __str__(self):
        return self.text()

    def text(self, notation=None):
        """The formulas as text: ``"matrix"`` (textbook: ᵀ, ∘, 𝟙, diag, with shared
        subterms named t₁, t₂, ...) or ``"numpy"`` (NumPy-style SymPy formulas).
        By default matrix notation whenever arrays are involved."""
        blocks = self._blocks()
        if self._notation(notation) == "matrix":
            outs, defs = self._rendered("text")
        else:
            exprs, named = self._shared()
            outs = [format_expr(e) for e in exprs]
            defs = [(str(s), format_expr(e)) for s, e, _ in named]
        lines = [f"{b.label} = {o}{shape_note(b.shape)}" for b, o in zip(blocks, outs)]
        if defs:
            lines.append("  where")
            lines += [f"    {n} = {d}" for n, d in defs]
        return "\n".join(lines)

    def latex(self, notation=None):
        """LaTeX of all formulas (an ``aligned`` block); ``notation`` as in ``text``."""
        blocks = self._blocks()
        if self._notation(notation) == "matrix":
            outs, defs = self._rendered("latex")
        else:
            exprs, named = self._shared()
            outs = [latex_expr(e) for e in exprs]
            defs = [(latex_expr(s), latex_expr(e)) for s, e, _ in named]
        rows = [rf"{b.latex} &= {o}" for b, o in zip(blocks, outs)]
        rows += [rf"{n} &= {d}" for n, d in defs]
        return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"

    def _repr_latex_(self):
        return "$$" + self.latex() + "$$"

    def program(self):
        """The straight-line program: forward ops, then derivative ops, one per line."""
        outputs = self._values() + [(b.label, b.node) for b in self._blocks()]
        lines, _ = program_lines(outputs, self.inputs)
        head = f"# inputs: " + ", ".join(
            f"{x.name}{fmt_shape(x.shape) if x.shape else ''}" for x in self.inputs)
        return "\n".join([head] + lines)

    def op_counts(self):
        """(forward ops, forward+derivative ops) of the straight-line program."""
        from .program import Program
        values = [v for _, v in self._values()]
        fwd = len(Program(values, self.inputs).statements)
        total = len(Program(values + [b.node for b in self._blocks() if b.node is not None],
                            self.inputs).statements)
        return fwd, total

    # ----- code ------------------------------------------------------------------------
    def _func_name(self):
        base = self.name if self.name.isidentifier() else "f"
        return f"grad_{base}"

    def _with_value(self, with_value):
        if not with_value:
            return None
        if self.output is None:
            raise ArgumentError(f"{self.name} has several outputs; with_value=True needs one")
        return self.output

    def compile(self, backend="numpy", with_value=False):
        """A plain function of the same positional arguments as ``f`` returning the tuple
        of results (one per block, in order) or ``(value, results)``, running NumPy or
        torch code only."""
        if self._compiled is None:
            self._compiled = {}
        key = (backend, bool(with_value))
        fn = self._compiled.get(key)
        if fn is None:
            blocks = self._blocks()
            fn = codegen.compile_function(
                [b.node for b in blocks], self.inputs, backend, self._func_name(),
                with_value=self._with_value(with_value), zero_shapes=[b.shape for b in blocks])
            self._compiled[key] = fn
        return fn

    def source(self, backend="numpy", with_value=False):
        """Standalone Python source of the compiled function (imports numpy/torch only)."""
        blocks = self._blocks()
        src, _ = codegen.build_source(
            [b.node for b in blocks], self.inputs, backend, self._func_name(),
            with_value=self._with_value(with_value), zero_shapes=[b.shape for b in blocks])
        return src

    def explicit(self, simplify=True, **dims):
        """Per-element closed forms for concrete sizes: {key: SymPy array or expr}."""
        from .shapes import dim_symbol
        bound = {dim_symbol(k): int(v) for k, v in dims.items()}
        blocks = self._blocks()
        arrays = _explicit.evaluate([b.filled for b in blocks], bound)
        return {b.key: _explicit.to_sympy(a, simplify) for b, a in zip(blocks, arrays)}

    def explicit_value(self, simplify=True, **dims):
        from .shapes import dim_symbol
        bound = {dim_symbol(k): int(v) for k, v in dims.items()}
        (arr,) = _explicit.evaluate([self.output], bound)
        return _explicit.to_sympy(arr, simplify)


class GradFn(DerivativeFn):
    """The gradient of a scalar function as formulas, a program and compiled code."""

    def __init__(self, name, inputs, wrt, value, grads):
        self.name = name
        self.inputs = inputs
        self.wrt = wrt
        self.output = value
        self.grads = grads
        self._compiled = {}

    def _label(self, x):
        return f"d{self.name}/d{x.name}"

    def _blocks(self):
        return [Block(x.name, self._label(x),
                      rf"\frac{{\partial {self.name}}}{{\partial "
                      rf"{latex_expr(sympy.Symbol(x.name))}}}", g, x.shape)
                for x, g in zip(self.wrt, self.grads)]

    def __repr__(self):
        args = ", ".join(f"{x.name}: {fmt_shape(x.shape)}" if x.shape else x.name
                         for x in self.inputs)
        return f"<GradFn of {self.name}({args}) w.r.t. {', '.join(x.name for x in self.wrt)}>\n{self}"


@enable_grad()  # a transform: under sg.no_grad its trace would carry no gradient
@gc_paused
def grad_fn(f, wrt=None, shapes=None, loss=None):
    """The gradient function of scalar-valued ``f``: formulas, program, compiled code.
    ``f`` may be an ``nn.Module`` (its parameters become symbols, see torch_module);
    ``loss`` turns the output of ``f`` into a scalar."""
    from .torch_module import as_function
    f, shapes, wrt = as_function(f, shapes, loss, wrt)
    name = getattr(f, "__name__", "f")
    if name == "<lambda>":
        name = "f"
    inputs = make_inputs(f, shapes)
    out = trace(f, inputs)
    _check_scalar(out, f"{name}()")
    sources = resolve_wrt(wrt, inputs, name)
    grads = backward([out], [const(1)], sources)
    return GradFn(name, inputs, sources, out, grads)


def _as_list(x):
    """Like torch: a tuple or list is a sequence of values; anything else (a Tensor, an
    array, a number) is one value."""
    if isinstance(x, (list, tuple)):
        return list(x), False
    return [x], True


def grad(outputs, inputs, grad_outputs=None, allow_unused=False, materialize_grads=False,
         retain_graph=None, create_graph=None):
    """Symbolic ``torch.autograd.grad``: gradients of ``outputs`` w.r.t. ``inputs`` as
    Tensors (differentiable again). ``retain_graph``/``create_graph`` are accepted for
    compatibility; symbolic gradients are always differentiable."""
    outs, _ = _as_list(outputs)
    ins, _ = _as_list(inputs)
    outs = [as_tensor(o, "grad") for o in outs]
    for i, x in enumerate(ins):
        if not isinstance(x, Tensor):
            raise SymgradError(f"grad: inputs[{i}] is a {type(x).__name__}, not a symbolic "
                               "Tensor; differentiate w.r.t. sg.symbol(...) values")
    if grad_outputs is None:
        seeds = []
        for i, o in enumerate(outs):
            if o.shape:
                raise NonScalarOutputError(
                    f"grad can be implicitly created only for scalar outputs: outputs[{i}] "
                    f"has shape {fmt_shape(o.shape)}; pass grad_outputs (a cotangent of that "
                    "shape) or reduce the output to a scalar")
            seeds.append(const(1))
    else:
        gos, _ = _as_list(grad_outputs)
        if len(gos) != len(outs):
            raise SymgradError(f"grad: {len(outs)} outputs but {len(gos)} grad_outputs")
        seeds = []
        for i, (o, g) in enumerate(zip(outs, gos)):
            if g is None:
                if o.shape:
                    raise NonScalarOutputError(
                        f"grad can be implicitly created only for scalar outputs: "
                        f"outputs[{i}] has shape {fmt_shape(o.shape)} and grad_outputs[{i}] "
                        "is None")
                seeds.append(const(1))
                continue
            g = as_tensor(g, "grad")
            if not shapes_equal(g.shape, o.shape):
                raise ShapeError(f"Mismatch in shape: grad_outputs[{i}] has a shape of "
                                 f"{fmt_shape(g.shape)} and outputs[{i}] has a shape of "
                                 f"{fmt_shape(o.shape)}")
            seeds.append(g)
    grads = backward(outs, seeds, ins)
    result = []
    for i, (x, g) in enumerate(zip(ins, grads)):
        if g is None:
            if not allow_unused and not materialize_grads and not _reaches(outs, x):
                raise SymgradError(
                    f"One of the differentiated Tensors (inputs[{i}]"
                    f"{', ' + x.name if x.name else ''}) appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = zeros(x.shape)
        result.append(g)
    return tuple(result)


def _reaches(outputs, x):
    from .graph import topo_order
    return any(n is x for n in topo_order(outputs))
