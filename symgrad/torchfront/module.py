"""nn.Modules as functions of symbols: ``sg.grad_fn(module, shapes=..., loss=...)``.

``module_function(module, shapes, loss)`` turns a module into a ``ModuleFunction``, a
plain function whose positional parameters are, in this order, the module's parameters,
its floating-point buffers, the arguments of its ``forward`` and the extra arguments of
``loss`` (such as a target). ``grad_fn`` and ``check`` then treat it like any function.

Names. A parameter or buffer is named after its qualified name: its own name, with
``weight`` shortened to ``W`` and ``bias`` to ``b``, then the path of its submodule, glued
on when the path is a number and after ``_`` otherwise: ``a`` -> ``a``, ``0.weight`` ->
``W0``, ``0.bias`` -> ``b0``, ``norm.weight`` -> ``W_norm``, ``blocks.1.attn.bias`` ->
``b_blocks_1_attn``. A name that clashes with another (or with an argument) falls back to
the full path, own name first (``weight_0``). ``ModuleFunction.symbols`` maps qualified
names to symbol names; ``shapes`` and ``wrt`` accept either.

Shapes. A parameter or buffer has the module's (concrete) shape unless ``shapes`` gives
one of the same rank, where a dim may be symbolic (a str). Forward's arguments need a
shape in ``shapes`` (``()`` for a scalar); the loss's extra arguments default to the shape
of the module's output. By default ``grad_fn`` differentiates w.r.t. the trainable
parameters, like ``loss.backward()`` (forward's arguments when there are none); ``wrt``
may name buffers and arguments too. Arguments that must stay fixed values (integer token
ids, class labels) are given with ``module_function(..., constants={name: value})``.

Tracing and reference. Called on symbolic Tensors, the function runs the module itself
(``module(x)``: hooks and forward exactly as written) while the module's parameter and
buffer slots hold the symbols, restored afterwards; torch calls inside trace through
the torch front end; a module whose forward cannot run on symbols (nn.LSTM makes its zero
state with ``torch.zeros`` of a possibly symbolic batch) runs a forward registered with
``module_forward`` instead. Called on torch tensors it runs the real module through
``torch.func.functional_call``, which is the reference ``sg.check`` compares with.
"""
import contextlib
import inspect
import re
import sys
import types
from typing import Any, Callable, Mapping

import sympy

from ..core.build import symbol
from ..core.graph import Tensor
from ..core.types import Shapes
from ..core.shapes import Unifier, as_shape, dim_symbols, fmt_shape, with_dtype_of
from ..errors import NonScalarOutputError, ShapeError, SymgradError
from .factories import symbolic_sizes

SHORT_NAMES = {"weight": "W", "bias": "b"}


def is_module(f):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(f, torch.nn.Module)


def _identifier(text):
    text = re.sub(r"\W", "_", text)
    return text if text.isidentifier() else "p_" + text


def _readable(qualname):
    *path, leaf = qualname.split(".")
    short = SHORT_NAMES.get(leaf, leaf)
    if not path:
        return _identifier(short)
    tail = "_".join(path)
    return _identifier(short + tail if tail.isdigit() else f"{short}_{tail}")


def _full(qualname):
    *path, leaf = qualname.split(".")
    return _identifier("_".join([leaf] + path))


def symbol_names(qualnames, reserved=()):
    """{qualified name: symbol name}, readable and unique, avoiding ``reserved``."""
    taken = set(reserved)
    first = {q: _readable(q) for q in qualnames}
    counts = {}
    for n in first.values():
        counts[n] = counts.get(n, 0) + 1
    out = {}
    for q in qualnames:
        name = first[q]
        if counts[name] > 1 or name in taken:
            name = _full(q)
        while name in taken:
            name += "_"
        taken.add(name)
        out[q] = name
    return out


def _state(module):
    """(qualified name, tensor, trainable) of the parameters, then the float buffers."""
    items = [(q, p, p.requires_grad) for q, p in module.named_parameters()]
    items += [(q, b, False) for q, b in module.named_buffers() if b.is_floating_point()]
    return items


def _signature_args(fn, what, skip_first=False):
    """Positional parameters of ``fn``: (required names, optional names, positional-only)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], [], set()
    params = list(sig.parameters.values())
    if skip_first and params and params[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        params = params[1:]
    required, optional, positional_only = [], [], set()
    for p in params:
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            if not skip_first and not required:
                raise SymgradError(f"{what} takes *{p.name}: symgrad cannot name its "
                                   "arguments; wrap the call in a function with named "
                                   "parameters and pass that to grad_fn")
            break
        if p.kind == inspect.Parameter.VAR_KEYWORD:
            continue
        if p.kind == inspect.Parameter.POSITIONAL_ONLY:
            positional_only.add(p.name)
        if p.default is inspect.Parameter.empty:
            if p.kind == inspect.Parameter.KEYWORD_ONLY and not skip_first:
                raise SymgradError(f"{what} has a required keyword-only argument "
                                   f"{p.name!r}; wrap the call in a function")
            if p.kind != inspect.Parameter.KEYWORD_ONLY:
                required.append(p.name)
        elif p.kind != inspect.Parameter.KEYWORD_ONLY:
            optional.append(p.name)
    return required, optional, positional_only


def _loss_target(loss):
    return loss.forward if is_module(loss) else loss


@contextlib.contextmanager
def holding(module, replacements):
    """The module with every parameter/buffer slot whose tensor is a key (by id) of
    ``replacements`` holding the replacement instead (shared tensors stay shared)."""
    saved = []
    try:
        for mod in module.modules():
            for store in (mod._parameters, mod._buffers):
                for key, value in store.items():
                    if value is not None and id(value) in replacements:
                        saved.append((store, key, value))
                        store[key] = replacements[id(value)]
        yield module
    finally:
        for store, key, value in reversed(saved):
            store[key] = value


@contextlib.contextmanager
def preserving_buffers(module):
    """The module's buffers as they were before, afterwards: a forward in training mode
    updates running statistics and counters in place (BatchNorm's ``running_mean``,
    ``num_batches_tracked``), and tracing or checking must not change the user's module."""
    import torch
    saved = [(b, b.detach().clone()) for b in module.buffers()]
    try:
        yield module
    finally:
        with torch.no_grad():
            for b, value in saved:
                if not torch.equal(b, value):
                    b.copy_(value)


MODULE_FORWARDS = {}   # "module.Class" of an nn.Module -> its forward on symbolic Tensors


def module_forward(*classes):
    """Register ``fn(module, *args, **kwargs)`` as the forward of the nn.Module classes
    named (dotted, as ``torch.nn.modules.rnn.LSTM``) while a ModuleFunction traces: for
    modules whose own forward cannot run on symbolic Tensors (nn.LSTM makes its zero
    state with ``torch.zeros`` of the batch size, which may be a symbol). A subclass that
    overrides forward keeps its own."""
    def register(fn):
        for name in classes:
            MODULE_FORWARDS[name] = fn
        return fn
    return register


def _registered_forward(cls):
    for base in cls.__mro__:
        fn = MODULE_FORWARDS.get(f"{base.__module__}.{base.__qualname__}")
        if fn is not None:
            return fn if cls.forward is base.forward else None
    return None


@contextlib.contextmanager
def symbolic_forwards(module):
    """The module with the registered forwards bound on its submodules (as instance
    attributes, so hooks still run), removed afterwards."""
    patched = []
    try:
        for mod in module.modules():
            fn = _registered_forward(type(mod))
            if fn is not None and "forward" not in vars(mod):
                vars(mod)["forward"] = types.MethodType(fn, mod)
                patched.append(mod)
        yield module
    finally:
        for mod in patched:
            vars(mod).pop("forward", None)


class _Mismatches(Unifier):
    """Inside ``with _Mismatches() as m``, the pairs of dims a shape constraint found
    unequal (``dims_match``), in order, in ``m.seen``; an enclosing Unifier still binds."""

    def __init__(self):
        super().__init__(())
        self.seen = []

    def bind(self, a, b):
        if self._outer is not None and self._outer.bind(a, b):
            return True
        self.seen.append((a, b))
        return False


class ModuleFunction:
    """A module (and optional loss) as a function of named symbols; see the module
    docstring. ``names`` are its positional parameters, ``shapes`` their shapes,
    ``wrt`` the trainable parameters, ``symbols`` {qualified name: symbol name}."""

    def __init__(self, module, shapes=None, loss=None, constants=None):
        self.module = module
        self.loss = loss
        self.constants = dict(constants or {})
        kind = type(module).__name__
        self._state = _state(module)
        required, optional, self._positional_only = _signature_args(
            module.forward, f"{kind}.forward")
        shapes = dict(shapes or {})
        self._forward_order = required + optional
        self._loss_order = []
        if loss is not None:
            self._loss_order, _, _ = _signature_args(_loss_target(loss), "loss",
                                                     skip_first=True)
        unknown = set(self.constants) - set(self._forward_order) - set(self._loss_order)
        if unknown:
            raise SymgradError(f"constants names {sorted(unknown)}, which are not arguments "
                               f"of {kind}.forward{self._forward_order} or of the loss")
        self.inputs = [n for n in required + [n for n in optional if n in shapes]
                       if n not in self.constants]
        self.loss_args = [n for n in self._loss_order if n not in self.constants]
        args = self.inputs + self.loss_args
        dup = {a for a in args if args.count(a) > 1}
        if dup:
            raise SymgradError(f"{kind}.forward and the loss both have arguments named "
                               f"{sorted(dup)}; pass a loss with other argument names "
                               "(e.g. lambda out, y: ...)")
        self.symbols = symbol_names([q for q, _, _ in self._state], reserved=args)
        self.names = list(self.symbols.values()) + args
        self.wrt = tuple(self.symbols[q] for q, _, trainable in self._state if trainable) \
            or tuple(self.inputs)
        self.__name__ = "L" if loss is not None else kind
        self.__qualname__ = self.__name__
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in self.names])
        self.shapes = self._shapes(shapes, kind)

    # ----- names and shapes ------------------------------------------------------------
    def resolve(self, key):
        """The symbol name a key of ``shapes``/``wrt`` stands for (a symbol name, a
        qualified parameter name or an argument name)."""
        if key in self.names:
            return key
        if key in self.symbols:
            return self.symbols[key]
        params = [f"{s} ({q})" if s != q else s for q, s in self.symbols.items()]
        more = f", ... ({len(params) - 8} more in .symbols)" if len(params) > 8 else ""
        known = ", ".join(params[:8] + self.inputs + self.loss_args)
        raise SymgradError(f"{key!r} names no parameter, buffer or argument of "
                           f"{type(self.module).__name__}; known names: {known}{more}")

    def _shapes(self, given, kind):
        given = {self.resolve(k): v for k, v in given.items()}
        self._given = set(given)
        shapes = {}
        for q, tensor, _ in self._state:
            name = self.symbols[q]
            actual = tuple(tensor.shape)
            if name not in given:
                shapes[name] = actual
                continue
            shape = as_shape(given[name])
            if len(shape) != len(actual) or any(
                    isinstance(d, int) and d != a for d, a in zip(shape, actual)):
                raise ShapeError(f"shapes[{name!r}] = {fmt_shape(shape)} does not fit "
                                 f"{kind}'s {q} of shape {fmt_shape(actual)}: give the same "
                                 "rank, with symbolic (str) dims or the module's sizes")
            shapes[name] = shape
        for a in self.inputs:
            if a not in given:
                raise SymgradError(f"the shape of {kind}.forward's argument {a!r} is "
                                   f"unknown; pass shapes={{{a!r}: (...)}} (() for a scalar)")
            shapes[a] = as_shape(given[a])
        missing = [a for a in self.loss_args if a not in given]
        if missing:
            out_shape = self._output_shape(shapes)
            for a in missing:
                shapes[a] = out_shape
        for a in self.loss_args:
            if a in given:
                shapes[a] = as_shape(given[a])
        return self._bind_dims(shapes)

    def _bind_dims(self, shapes):
        """Symbolic dims of the inputs that meet the module's concrete parameters take
        the parameters' sizes: with ``a`` of shape (1, 2), ``x: ("n",)`` in ``a @ x``
        means n = 2 (a dim the module fixes cannot stay symbolic)."""
        free = {d for name in self.inputs + self.loss_args for d in dim_symbols(shapes[name])}
        fixed = [self.symbols[q] for q, _, _ in self._state if self.symbols[q] not in self._given]
        if not free or not fixed:
            return shapes
        with Unifier(free) as unifier:
            try:
                self._forward([symbol(n, shapes[n]) for n in self.names[:len(self.symbols) + len(self.inputs)]])
            except SymgradError:
                return shapes
        if not unifier.bindings:
            return shapes
        return {name: with_dtype_of(shape, tuple(
                    unifier.bindings.get(d, d) if isinstance(d, sympy.Symbol) else d
                    for d in shape)) for name, shape in shapes.items()}

    def _output_shape(self, shapes):
        symbols = [symbol(n, shapes[n]) for n in self.names[:len(self.symbols) + len(self.inputs)]]
        out = self._forward(symbols)
        if not isinstance(out, Tensor):
            raise SymgradError(f"{type(self.module).__name__} returns a "
                               f"{type(out).__name__}; give the shapes of the loss arguments "
                               f"{self.loss_args} in shapes")
        return out.shape

    def translate_wrt(self, wrt):
        if wrt is None:
            return self.wrt
        if isinstance(wrt, str):
            return self.resolve(wrt)
        if isinstance(wrt, (tuple, list)):
            return type(wrt)(self.resolve(w) if isinstance(w, str) else w for w in wrt)
        return wrt

    # ----- calling ---------------------------------------------------------------------
    def _split(self, args):
        n_state, n_in = len(self._state), len(self.inputs)
        if len(args) != len(self.names):
            raise SymgradError(f"{self.__name__}() takes {len(self.names)} arguments "
                               f"({', '.join(self.names)}), got {len(args)}")
        return args[:n_state], args[n_state:n_state + n_in], args[n_state + n_in:]

    def _call_forward(self, module, inputs):
        positional, keywords, gap = [], {}, False
        given = {**self.constants, **dict(zip(self.inputs, inputs))}
        for name in self._forward_order:
            if name not in given:
                gap = True
            elif gap and name not in self._positional_only:
                keywords[name] = given[name]
            else:
                positional.append(given[name])
        return module(*positional, **keywords)

    def _forward(self, args):
        state, inputs = args[:len(self._state)], args[len(self._state):]
        replacements = {id(t): v for (_, t, _), v in zip(self._state, state)}
        mismatches = _Mismatches()
        try:
            # the main trace's context (torch's factories taking symbolic sizes, the
            # out-of-place mask conversion) also for the shape-finding runs of forward
            with symbolic_sizes(), preserving_buffers(self.module), \
                    holding(self.module, replacements), symbolic_forwards(self.module), \
                    mismatches:
                return self._call_forward(self.module, inputs)
        except ShapeError as e:
            hint = self._shape_hint(mismatches.seen)
            if not hint:
                raise
            noted = type(e)(f"{e}{hint}")      # the same kind of error (DimValueError)
            noted.__dict__.update(vars(e))
            raise noted from None

    def _shape_hint(self, mismatches):
        """Parameters keep the module's concrete sizes unless ``shapes`` says otherwise,
        which clashes with symbolic sizes given to the inputs: said when the error comes
        from two dims that differ (the last ``mismatches``), one of them a size of such a
        parameter; not for errors of another kind (a sequence length that must be
        concrete)."""
        kept = [(q, self.symbols[q], t) for q, t, _ in self._state
                if self.symbols[q] not in getattr(self, "_given", ())]
        sizes = {d for _, _, t in kept for d in t.shape}
        if not kept or not mismatches or not any(
                isinstance(d, int) and d in sizes for d in mismatches[-1]):
            return ""
        listed = ", ".join(f"{s}: {fmt_shape(tuple(t.shape))}" for _, s, t in kept[:6])
        return (f"\n  note: {type(self.module).__name__}'s parameters keep the module's "
                f"concrete shapes ({listed}{', ...' if len(kept) > 6 else ''}) unless shapes "
                f"gives them symbolic dims too, e.g. shapes={{{kept[0][1]!r}: (...), ...}} "
                "with dim names shared with the inputs' shapes")

    def __call__(self, *args):
        state, inputs, extra = self._split(args)
        if any(isinstance(a, Tensor) for a in args):
            out = self._forward(list(state) + list(inputs))
        else:
            out = self._reference(state, inputs)
        if self.loss is not None:
            given = {**self.constants, **dict(zip(self.loss_args, extra))}
            return self.loss(out, *[given[n] for n in self._loss_order])
        if isinstance(out, Tensor) and out.shape or isinstance(out, (tuple, list, dict)):
            what = (f"a Tensor of shape {fmt_shape(out.shape)}" if isinstance(out, Tensor)
                    else f"a {type(out).__name__}")
            raise NonScalarOutputError(
                f"{type(self.module).__name__} returns {what}; a gradient needs a scalar. "
                "Pass loss=... to grad_fn (e.g. loss=torch.sum, or "
                "loss=torch.nn.functional.mse_loss with a target argument)")
        return out

    def _reference(self, state, inputs):
        """The real module on torch tensors (torch.func.functional_call)."""
        import torch
        state = [torch.as_tensor(v, dtype=torch.float64) if not isinstance(v, torch.Tensor)
                 else v for v in state]
        inputs = [torch.as_tensor(v, dtype=torch.float64) if not isinstance(v, torch.Tensor)
                  and not isinstance(v, (int, float)) else v for v in inputs]
        values = {q: v for (q, _, _), v in zip(self._state, state)}
        # the other buffers (BatchNorm's num_batches_tracked) as copies: a forward in
        # training mode updates them in place, and the user's module must not change
        values.update({q: b.clone() for q, b in self.module.named_buffers()
                       if q not in values and b is not None})
        holder = _FunctionalCall(self.module, values)
        return self._call_forward(holder, inputs)

    def arguments(self, *inputs, backend="torch"):
        """Values for the compiled gradient: the module's parameters and buffers, then
        ``inputs`` (forward's arguments and the loss's), as torch tensors or NumPy arrays."""
        import torch
        values = [t.detach() for _, t, _ in self._state] + [
            torch.as_tensor(v) for v in inputs]
        if backend == "numpy":
            return [v.double().cpu().numpy() for v in values]
        return values


class _FunctionalCall:
    """Calls ``module`` with ``values`` for its parameters and buffers (positional and
    keyword forward arguments pass through)."""

    def __init__(self, module, values):
        self.module, self.values = module, values

    def __call__(self, *args, **kwargs):
        from torch.func import functional_call
        return functional_call(self.module, self.values, tuple(args), kwargs)


def module_function(module: Any, shapes: Shapes | None = None,
                    loss: Callable[..., Any] | None = None,
                    constants: Mapping[str, Any] | None = None) -> "ModuleFunction":
    """``module`` (an nn.Module) with optional ``loss`` as a ``ModuleFunction``, which
    ``grad_fn`` and ``check`` accept. ``constants`` gives fixed values to arguments of
    forward or of the loss that are not symbols (integer token ids, class labels, masks)."""
    if not is_module(module):
        raise SymgradError(f"module_function needs a torch.nn.Module, got "
                           f"{type(module).__name__}")
    return ModuleFunction(module, shapes, loss, constants)


def _with_loss(f, loss):
    """``loss(f(...))`` with ``f``'s signature, for ``grad_fn(f, loss=...)``."""
    def composed(*args):
        return loss(f(*args))
    composed.__name__ = composed.__qualname__ = "L"
    composed.__signature__ = inspect.signature(f)
    composed.__annotations__ = getattr(f, "__annotations__", {})
    return composed


def as_function(f, shapes=None, loss=None, wrt=None):
    """(function, shapes, wrt) for grad_fn/check: a module becomes a ModuleFunction, a
    function with a ``loss`` is composed with it, anything else passes through."""
    if isinstance(f, ModuleFunction):
        if loss is not None or shapes:
            f = ModuleFunction(f.module, {**f.shapes, **(shapes or {})},
                               f.loss if loss is None else loss, f.constants)
        return f, f.shapes, f.translate_wrt(wrt)
    if is_module(f):
        f = ModuleFunction(f, shapes, loss)
        return f, f.shapes, f.translate_wrt(wrt)
    if loss is not None:
        return _with_loss(f, loss), shapes, wrt
    return f, shapes, wrt
