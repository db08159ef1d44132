"""Tracing Python functions, ``grad_fn`` and ``grad``.

``grad_fn(f)`` traces ``f`` on symbols (one per parameter, shaped by ``shapes`` or
annotations), differentiates the scalar result in one reverse sweep and returns a
``GradFn``: the gradient as formulas, a program, and compiled NumPy/torch functions.
"""
import ast
import functools
import inspect
import unicodedata
from typing import Any, Callable, Sequence

import sympy

from ..core.build import (
    as_tensor, const, gc_paused, is_symmetric_leaf, naming_captures, symbol, torch_module)
from ..core.constructors import zeros
from ..core.grad_mode import enable_grad
from ..core.graph import Tensor
from ..core.types import Shapes, TensorLike, Wrt
from ..core.shapes import KIND_DTYPES, DimValueError, TensorSpec, as_shape, dim_symbols, fmt_shape, shapes_equal
from ..codegen import backend as backend_named
from ..core.graph import topo_order
from ..core.loops import find_loop
from ..diff.reverse import backward
from ..diff.rolled import rolled_gradient
from ..errors import NonScalarOutputError, OperandError, ShapeError, SymgradError
from ..torchfront.factories import symbolic_sizes
from ..torchfront.module import as_function
from ..views.latex import latex_expr, latex_name
from .derivative import Block, DerivativeFn


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
                return as_shape(tuple(e.value for e in elts if isinstance(e, ast.Constant)))
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


def positional(f):
    """``f`` with its keyword-only parameters after its positional ones, as one positional
    signature: a formula's inputs, and the compiled function's arguments, are positional.
    A keyword-only parameter without a default makes the defaults before it required."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return f
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    pos = [p for p in sig.parameters.values() if p.kind in kinds]
    kw = [p for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    if not kw or any(p.kind is inspect.Parameter.VAR_POSITIONAL
                     for p in sig.parameters.values()):
        return f
    params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in pos + kw]
    last_required = max((i for i, p in enumerate(params) if p.default is p.empty), default=-1)
    params = [p.replace(default=p.empty) if i < last_required else p
              for i, p in enumerate(params)]
    n, names = len(pos), [p.name for p in kw]

    @functools.wraps(f)
    def keywords_by_position(*args):
        return f(*args[:n], **dict(zip(names, args[n:])))
    keywords_by_position.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return keywords_by_position


def make_inputs(f, shapes=None):
    """One symbol per parameter of ``f``, shaped by ``shapes`` or annotations. Trailing
    parameters with a default keep it (they are constants of the formula) unless
    ``shapes`` names them, which makes them inputs."""
    shapes = dict(shapes or {})
    params = parameters(f)
    while params and params[-1].default is not inspect.Parameter.empty and \
            params[-1].name not in shapes:
        params.pop()               # a default stays a default unless shapes names it
    names = [p.name for p in params]
    unknown = [k for k in shapes if k not in names]
    variadic = [p.name for p in inspect.signature(f).parameters.values()
                if p.kind is inspect.Parameter.VAR_POSITIONAL]
    if variadic and (unknown or not params):
        fname = getattr(f, "__name__", "f")
        raise SymgradError(
            f"{fname}(*{variadic[0]}) takes its inputs as *{variadic[0]}: symgrad names each "
            "input after a parameter (its formulas and the compiled code's arguments "
            f"use the names); give {fname} one named parameter per input, or wrap it: "
            f"lambda x, y: {fname}(x, y)")
    if unknown:
        raise SymgradError(f"shapes names {unknown} that are not parameters of "
                           f"{getattr(f, '__name__', 'f')}({', '.join(names)})")
    inputs = []
    for p in params:
        if p.name in shapes:
            shape = as_shape(shapes[p.name])
        else:
            shape = _annotation_shape(p.annotation) or ()
        inputs.append(symbol(p.name, shape, getattr(shape, "dtype", None)))
    dims = {str(d) for x in inputs for d in dim_symbols(x.shape)}
    clash = dims & set(names)
    if clash:
        raise SymgradError(f"dim name(s) {sorted(clash)} are also parameter names; "
                           "rename the dims (e.g. 'n' -> 'N')")
    check_distinct_names(sorted(dims) + names, "names of dims and parameters")
    return inputs


def check_distinct_names(names, what):
    """Two names that Python would read as one identifier (equal after NFKC
    normalisation, like ``n`` and the full-width ``ｎ``) are an error: the code and the
    formulas could not keep them apart for the reader."""
    seen: dict[str, str] = {}
    for name in names:
        key = unicodedata.normalize("NFKC", name)
        other = seen.setdefault(key, name)
        if other != name:
            raise ShapeError(f"{what}: {other!r} and {name!r} are the same name once Unicode "
                             "look-alike characters are normalised (NFKC, as Python reads "
                             "identifiers); spell them the same, or pick distinct names")


def trace(f, inputs):
    try:
        with symbolic_sizes(), naming_captures(f):
            out = f(*inputs)
    except DimValueError as e:
        raise _naming_inputs(e, inputs) from None
    if isinstance(out, (tuple, list)):
        raise NonScalarOutputError(
            f"{getattr(f, '__name__', 'f')} returns {len(out)} values; grad_fn needs one "
            "scalar; use sg.vjp or sg.jacobian for several outputs")
    return as_tensor(out, "output")


def _naming_inputs(error, inputs):
    """``error`` saying which inputs carry the dims it is about, with one of them in its
    example (``shapes={'q': (8, ...)}``)."""
    dims = set(getattr(error, "dims", ()))
    owners = [x for x in inputs if dims & {str(d) for d in dim_symbols(x.shape)}]
    if not owners:
        return error
    x = owners[0]
    sizes = ["8" if str(d) in dims else str(d) for d in x.shape]
    example = "(" + ", ".join(sizes) + ("," if len(sizes) == 1 else "") + ")"
    text = str(error).replace("shapes={'x': (8, ...)}", f"shapes={{{x.name!r}: {example}}}")
    text = text.replace("--shape x=8,...", f"--shape {x.name}={','.join(sizes)}")
    listed = ", ".join(f"{o.name}: {fmt_shape(o.shape)}" for o in owners)
    new = DimValueError(f"{text} [{', '.join(sorted(dims))} is a dim of {listed}]")
    new.dims = sorted(dims)
    return new


def resolve_wrt(wrt, inputs, fname="f"):
    names = [x.name for x in inputs]
    if wrt is None:
        return [x for x in inputs if x.kind == "float"]
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    out = []
    for w in items:
        if isinstance(w, bool):
            raise SymgradError(f"wrt must name parameters of {fname}, got {w!r}")
        if isinstance(w, int):
            if not -len(inputs) <= w < len(inputs):
                count = f"{len(inputs)} parameter" + ("" if len(inputs) == 1 else "s")
                raise SymgradError(f"wrt={w} is out of range: {fname} has {count} "
                                   f"({', '.join(names)})")
            out.append(inputs[w])
        elif isinstance(w, str):
            if w not in names:
                raise SymgradError(f"wrt={w!r} is not a parameter of {fname}"
                                   f"({', '.join(names)})")
            out.append(inputs[names.index(w)])
        else:
            raise SymgradError(f"wrt items are parameter names or positions, got {w!r}")
    for x in out:
        if x.kind != "float":
            raise SymgradError(f"wrt names {x.name}, an {x.kind} input of {fname} (dtype "
                               f"{KIND_DTYPES[x.kind]}): integer and boolean inputs have no "
                               "gradient; leave it out of wrt")
    return out


def input_text(x):
    """``X: (n, n) symmetric``, ``x: (n,)`` or ``a``: a parameter as a repr lists it."""
    if not x.shape:
        return x.name
    return f"{x.name}: {fmt_shape(x.shape)}" + (" symmetric" if is_symmetric_leaf(x) else "")


def _check_scalar(out, what):
    if out.shape:
        raise NonScalarOutputError(
            f"{what} returns a Tensor of shape {fmt_shape(out.shape)}; a gradient can be "
            "implicitly created only for scalar outputs. Reduce it to a scalar (e.g. "
            "sg.sum), or use sg.vjp / sg.jacobian for non-scalar outputs")


class GradFn(DerivativeFn):
    r"""The gradient of a scalar function as formulas, a program and compiled code.

    Example:

    >>> import symgrad as sg
    >>> g = sg.grad_fn(lambda x, y: x * sg.exp(y))
    >>> print(g)
    df/dx = exp(y)
    df/dy = x*exp(y)
    >>> g.formulas
    {'x': exp(y), 'y': x*exp(y)}
    >>> g.compile()(2.0, 0.0)
    (1.0, 2.0)
    >>> g(2.0, 0.0)
    (1.0, 2.0)
    >>> print(g.latex())
    \begin{aligned}
    \frac{\partial f}{\partial x} &= e^{y} \\
    \frac{\partial f}{\partial y} &= x e^{y}
    \end{aligned}
    """

    def __init__(self, name: str, inputs: list[Tensor], wrt: list[Tensor], value: Tensor,
                 grads: Sequence[Tensor | None] | None, rolled: Any = None) -> None:
        self.name = name
        self.inputs = inputs
        self.wrt = wrt
        self.output = value
        self._grads = grads
        self._rolled_plan = rolled
        self._compiled = {}

    @property
    def grads(self) -> Sequence[Tensor | None]:
        """The gradient per ``wrt`` input as graph nodes (None for a known zero). For a
        function whose trace repeats a body many times (``core.loops``), compiled code
        derives from one copy of the body, and this whole graph is swept only when a view
        asks for it."""
        if self._grads is None:
            self._grads = backward([self.output], [const(1)], self.wrt)
        return self._grads

    def _rolled(self, backend):
        plan = self._rolled_plan
        return plan if plan is not None and backend_named(backend).rolls(plan) else None

    def _zero_shapes(self):
        return [x.shape for x in self.wrt]

    def _label(self, x):
        return f"d{self.name}/d{x.name}"

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        """The gradient at ``args`` (numbers, NumPy arrays or torch tensors), one result
        per ``wrt`` input, as ``torch.autograd.grad`` returns it: the compiled torch code
        when an argument is a torch tensor, else the NumPy code (``compile()``)."""
        torch = torch_module()
        tensors = torch is not None and any(isinstance(a, torch.Tensor) for a in args)
        return self.compile("torch" if tensors else "numpy")(*args)

    def _blocks(self):
        return [Block(x.name, self._label(x),
                      rf"\frac{{\partial {latex_name(self.name)}}}{{\partial "
                      rf"{latex_expr(sympy.Symbol(x.name))}}}", g, x.shape)
                for x, g in zip(self.wrt, self.grads)]

    def __repr__(self):
        args = ", ".join(input_text(x) for x in self.inputs)
        return f"<GradFn of {self.name}({args}) w.r.t. {', '.join(f'{x.name}' for x in self.wrt)}>\n{self}"


@enable_grad()  # a transform: under sg.no_grad its trace would carry no gradient
@gc_paused
def grad_fn(f: Callable[..., Any], wrt: Wrt = None, shapes: Shapes | None = None,
            loss: Callable[..., Any] | None = None) -> GradFn:
    """The gradient function of scalar-valued ``f``: formulas, program, compiled code.

    ``wrt`` names the inputs to differentiate by (a name, an index, or a list of them).
    By default it is every float input: a formula for each parameter is what one reads a
    gradient function for, and ``g.compile()`` then returns one block per input.
    ``torch.func.grad`` and ``jax.grad`` default to the first argument instead because
    they return a value; ``wrt=0`` gives that. ``sg.jacobian`` and ``sg.hessian`` objects
    use the same default, while their primal forms (``sg.hessian(f, x)``) follow
    ``torch.func`` (``argnums=0``). Parameters with defaults stay defaults unless
    ``shapes`` names them. ``f`` may be an ``nn.Module`` (its parameters become symbols,
    see ``torchfront.module``); ``loss`` turns the output of ``f`` into a scalar.

        >>> import symgrad as sg
        >>> g = sg.grad_fn(lambda x, y: (x * y).sum(), shapes={"x": ("n",), "y": ("n",)})
        >>> print(g.text())
        df/dx = y    [shape (n,)]
        df/dy = x    [shape (n,)]
    """
    f, shapes, wrt = as_function(positional(f), shapes, loss, wrt)
    name = getattr(f, "__name__", "f")
    if name == "<lambda>":
        name = "f"
    inputs = make_inputs(f, shapes)
    out = trace(f, inputs)
    _check_scalar(out, f"{name}()")
    order = topo_order([out])
    _check_no_outside_symbols(order, inputs, name)
    sources = resolve_wrt(wrt, inputs, name)
    loop = find_loop(order)
    plan = rolled_gradient(loop, out, inputs, sources) if loop is not None else None
    grads = backward([out], [const(1)], sources) if plan is None else None
    return GradFn(name, inputs, sources, out, grads, plan)


def _check_no_outside_symbols(order, inputs, name):
    """A symbol ``f`` captured instead of taking it as a parameter would be read, in
    compiled code, from whatever has its name (an input, a dim): refused. ``order``: the
    nodes of the traced function."""
    own = {id(x) for x in inputs}
    for node in order:
        if node.op == "symbol" and id(node) not in own:
            params = ", ".join(str(x.name) for x in inputs)
            raise OperandError(
                f"{name}({params}) uses the symbol {node.name} of shape "
                f"{fmt_shape(node.shape)}, which is not one of its parameters; make it a "
                "parameter (or pass its value as a constant)")


def _walk(outputs, passes=lambda node: True):
    """Each node reached from ``outputs`` once (iteratively: graphs are deep), through
    the nodes ``passes`` accepts."""
    seen, stack = set(), [o for o in outputs if passes(o)]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(i for i in node.inputs if passes(i))


def _as_list(x):
    """Like torch: a tuple or list is a sequence of values; anything else (a Tensor, an
    array, a number) is one value."""
    if isinstance(x, (list, tuple)):
        return list(x), False
    return [x], True


@enable_grad()  # as torch's create_graph=True: the gradients differentiate again
def grad(outputs: TensorLike | Sequence[TensorLike], inputs: Tensor | Sequence[Tensor],
         grad_outputs: TensorLike | Sequence[TensorLike | None] | None = None,
         allow_unused: bool = False, materialize_grads: bool = False,
         retain_graph: bool | None = None,
         create_graph: bool | None = None) -> tuple[Tensor | None, ...]:
    """Symbolic ``torch.autograd.grad``: gradients of ``outputs`` w.r.t. ``inputs`` as
    Tensors (differentiable again). ``retain_graph``/``create_graph`` are accepted for
    compatibility; symbolic gradients are always differentiable. On torch tensors it is
    ``torch.autograd.grad`` with ``create_graph=True`` (so a function using it runs on
    torch tensors too, as ``sg.check``'s reference run does).

    Example:

    >>> import symgrad as sg
    >>> a = sg.symbol("a")
    >>> b = sg.symbol("b")
    >>> da, db = sg.grad(a * sg.sin(b), [a, b])
    >>> da, db
    (Tensor(sin(b), shape=()), Tensor(a*cos(b), shape=()))
    >>> sg.grad(da * db, [b])
    (Tensor(-a*sin(b)**2 + a*cos(b)**2, shape=()),)
    """
    outs, _ = _as_list(outputs)
    ins, _ = _as_list(inputs)
    torch = torch_module()
    if torch is not None and ins and all(isinstance(x, torch.Tensor) for x in ins):
        return torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=allow_unused,
                                   materialize_grads=materialize_grads, create_graph=True,
                                   retain_graph=True)
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
    """Whether ``x`` is reached from ``outputs`` along differentiable edges (a detached
    value, one built under ``sg.no_grad``, does not pass its inputs on)."""
    return any(node is x for node in _walk(outputs, lambda node: node.op != "detach"))
