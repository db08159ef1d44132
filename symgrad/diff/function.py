"""Custom ops with their own backward: ``sg.Function``, like ``torch.autograd.Function``.

    class Exp(sg.Function):
        @staticmethod
        def forward(ctx, i):
            r = sg.exp(i); ctx.save_for_backward(r); return r
        @staticmethod
        def backward(ctx, grad):
            r, = ctx.saved_tensors; return grad * r

On symbolic Tensors ``Exp.apply(x)`` works in four steps (``_apply_symbolic``):

1. ``forward`` is traced on fresh placeholder symbols, one per Tensor argument, so the
   forward is a small graph of its own and whatever it saves is known by structure: an
   input, an output or an intermediate. A Tensor from outside the Function inside it is
   an error: ``backward`` returns no gradient for it.
2. ``backward`` is traced once, on new placeholders: one per saved tensor and one per
   output gradient. Its gradients may depend on those and on constants only.
   Anything else in them (an intermediate kept on ``ctx`` or in a closure, a Tensor from
   outside) is a capture and an error: the next differentiation would treat it as a
   constant and double backward would be silently wrong.
3. The application is recorded in the outer graph. The forward graph is replayed on the
   actual inputs (its values are shared and compiled like any others) and each output is
   a ``custom`` node with inputs (every output's forward value, *Tensor arguments, *saved
   intermediates). The node carries its own rule in ``attrs["rule"]`` (read by
   ``diff.reverse.rule_for``): its VJP is the traced backward with the placeholders replaced
   by the saved values (read from the node's inputs) and the incoming gradient. The
   forward values get no gradient: the custom backward stands for their derivative.
4. A saved intermediate is promoted to a hidden output: its replayed node is an input of
   the custom nodes and the backward reads that node. Differentiating the backward again
   sends gradient into it, and from it through the forward's own ops to the inputs:
   the fix for an aggregate op whose intermediate ``t`` must become an output of the tape.

Forward mode (``sg.jvp``, the outer sweep of ``sg.hessian``) differentiates the forward's
own ops. On numbers and arrays ``apply`` just runs ``forward``; on torch tensors it runs as
a ``torch.autograd.Function`` calling the same ``forward`` and ``backward``.
"""
import inspect
import itertools
from typing import Any

from ..core.build import as_tensor, internal_symbol, make, torch_module
from ..core.constructors import zeros
from ..core.extensions import Slot
from ..core.graph import Tensor, topo_order
from ..core.opdef import defop
from ..core.ops.pointwise import detach
from ..core.shapes import broadcast_shapes, fmt_shape, shapes_equal
from ..errors import ArgumentError, ShapeError, SymgradError
from .helpers import sum_to

_counter = itertools.count()


class FunctionError(SymgradError):
    """A custom ``sg.Function`` that symgrad cannot differentiate correctly."""


def substitute(outputs, mapping):
    """``outputs`` rebuilt with the nodes in ``mapping`` ({id(node): new node}) replaced;
    subgraphs that do not reach a replaced node are kept as they are. Linear in the graph:
    each node is rebuilt once, through ``make``, so the result is interned and simplified."""
    new = dict(mapping)
    for node in topo_order([o for o in outputs if o is not None]):
        if id(node) in new:
            continue
        ins = tuple(new[id(i)] for i in node.inputs)
        same = all(a is b for a, b in zip(ins, node.inputs))
        new[id(node)] = node if same else make(node.op, ins, node.params)
    return [None if o is None else new[id(o)] for o in outputs]


class FunctionCtx:
    """The ``ctx`` of ``forward`` and ``backward``: ``save_for_backward``,
    ``saved_tensors``, ``needs_input_grad``, ``mark_non_differentiable``."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = tuple(needs_input_grad)
        self.to_save = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self._saved = None

    def save_for_backward(self, *tensors):
        """Keep inputs, outputs or intermediates for ``backward`` (Tensors or None)."""
        self.to_save = tensors

    def replay(self, saved):
        """Let ``backward`` read ``saved`` as ``saved_tensors`` (placeholders while symgrad
        traces it, the values forward saved when it runs on torch tensors)."""
        self._saved = tuple(saved)

    @property
    def saved_tensors(self):
        """In ``backward``: the saved values (as placeholders while symgrad traces it)."""
        return self.to_save if self._saved is None else self._saved

    def mark_non_differentiable(self, *outputs):
        """Outputs that carry no gradient (torch's ``ctx.mark_non_differentiable``)."""
        self.non_differentiable = outputs

    def set_materialize_grads(self, value):
        """Accepted for torch compatibility: symgrad always passes a gradient Tensor for
        every output (a known zero where none flows) and skips what it multiplies."""
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom ops. Subclass it with static ``forward(ctx, *args)`` and
    ``backward(ctx, *grads)`` (returning one gradient or None per argument of
    ``forward``) and call ``YourOp.apply(*args)``. The torch 2 style, ``forward(*args)``
    plus ``setup_context(ctx, inputs, output)``, works too."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        raise NotImplementedError("define forward(ctx, *args) in your sg.Function subclass")

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError("define backward(ctx, *grads) in your sg.Function subclass")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        raise NotImplementedError

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ArgumentError(f"{type(self).__name__} is an sg.Function: call "
                        f"{type(self).__name__}.apply(...) instead of instantiating it")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Apply the op: records a node on symbolic Tensors, computes on numbers, arrays
        and torch tensors."""
        if any(isinstance(a, Tensor) for a in args):
            return _apply_symbolic(cls, args)
        torch = torch_module()
        if torch is not None and any(isinstance(a, torch.Tensor) for a in args):
            return torch_adapter(cls).apply(*args)
        out = call_forward(cls, FunctionCtx([False] * len(args)), args)
        return out


def call_forward(cls, ctx, args):
    """``forward`` of ``cls`` in either style (with ``ctx`` or with ``setup_context``)."""
    if cls.setup_context is not Function.setup_context:
        out = cls.forward(*args)
        cls.setup_context(ctx, tuple(args), out)
        return out
    return cls.forward(ctx, *args)


def _arg_names(cls, n):
    """Names of forward's parameters (for placeholders and messages)."""
    try:
        params = list(inspect.signature(cls.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    if cls.setup_context is Function.setup_context:
        params = params[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) and names[i].isidentifier() else f"arg{i}"
            for i in range(n)]


# ----- symbolic application ------------------------------------------------------------

class Application:
    """One application of a Function: the rule of its output nodes.

    It holds no value of the outer graph. Each differentiable output is a ``custom`` node
    whose inputs are every output's forward value, then the Tensor arguments, then the
    saved intermediates (``layout``), so any rewrite of the graph (``substitute``, the
    transforms' primal substitution) carries them along, and the interning table does not
    keep the application's graph alive. The traced backward lives on placeholders."""

    def __init__(self, cls, arg_names):
        self.cls = cls
        self.name = cls.__name__
        self.arg_names = arg_names
        self.input_positions = []  # positions of the Tensor arguments among forward's
        self.n_values = 0         # forward values (one per differentiable output)
        self.n_args = 0           # Tensor arguments
        self.saved_from = []      # per saved tensor: None, ("value", j), ("arg", i), ("hidden", h)
        self.saved_ph = []
        self.grad_ph = []
        self.grads = []           # backward's result per Tensor argument, over placeholders

    # the interface of a Rule, as the sweeps use it
    differentiable = True

    @property
    def source(self):
        try:
            return f"{inspect.getsourcefile(self.cls)}:{inspect.getsourcelines(self.cls)[1]}"
        except (OSError, TypeError):
            return self.cls.__qualname__

    # ----- reading a custom node ---------------------------------------------------------
    def outputs(self, node):
        """Every differentiable output of the application ``node`` belongs to."""
        return tuple(make("custom", node.inputs, (("rule", self), ("index", k)))
                     for k in range(self.n_values))

    def arguments(self, node):
        return node.inputs[self.n_values:self.n_values + self.n_args]

    def hidden(self, node):
        """The saved intermediates: inputs of the node, so gradients of gradients reach
        the arguments through them."""
        return node.inputs[self.n_values + self.n_args:]

    def saved(self, node):
        """What backward reads, as values of the outer graph."""
        outputs = None
        out = []
        for src in self.saved_from:
            if src is None:
                out.append(None)
            elif src[0] == "value":
                outputs = outputs or self.outputs(node)
                out.append(outputs[src[1]])
            elif src[0] == "arg":
                out.append(self.arguments(node)[src[1]])
            else:
                out.append(self.hidden(node)[src[1]])
        return tuple(out)

    # ----- the rule ----------------------------------------------------------------------
    def input_differentiable(self, i):
        k = i - self.n_values
        return 0 <= k < self.n_args and self.grads[k] is not None

    def vjps(self, node, grad):
        """backward's gradients for every Tensor argument, given ``grad`` for ``node``
        (kept on the node for the sweep's calls for each argument, not on the
        application, which must not hold values of the outer graph)."""
        cached = node.attrs.get("_vjps")
        if cached is not None and cached[0] is grad:
            return cached[1]
        k = node.attrs["index"]
        mapping = {id(p): v for p, v in zip(self.saved_ph, self.saved(node)) if p is not None}
        for j, p in enumerate(self.grad_ph):
            mapping[id(p)] = grad if j == k else zeros(p.shape)
        result = substitute(self.grads, mapping)
        node.attrs["_vjps"] = (grad, result)
        return result

    def apply_vjp(self, node, i, grad):
        # forward values and saved intermediates get nothing: the custom backward stands
        # for the derivative of the application
        if not self.input_differentiable(i):
            return None
        return self.vjps(node, grad)[i - self.n_values]

    def apply_jvp(self, node, tangents):
        return tangents[node.attrs["index"]]  # forward mode differentiates forward's own ops

    def __repr__(self):
        return f"<{self.name}.apply on {self.n_args} Tensor(s)>"


def _custom_shape(op, shapes, attrs):
    return shapes[attrs["index"]]


defop("custom", None, sympy=lambda attrs, *operands: operands[attrs["index"]],
      shape=_custom_shape, key_params=("index",), node_rule=True,
      matrix=lambda m, node, *terms: terms[node.attrs["index"]],
      elements=lambda ctx, *arrays: arrays[ctx.attrs["index"]],
      doc="an sg.Function application: one output's forward value; its rule is "
          "attrs['rule'], its printed form that value")


def _leaf_symbols(nodes):
    return [n for n in topo_order([n for n in nodes if n is not None]) if n.is_symbol]


def _check_forward(app, nodes, placeholders):
    allowed = {id(p) for p in placeholders}
    for leaf in _leaf_symbols(nodes):
        if id(leaf) not in allowed:
            raise FunctionError(
                f"{app.name}.forward uses the Tensor '{leaf.name}' (shape "
                f"{fmt_shape(leaf.shape)}) that is not one of its arguments: backward returns "
                f"no gradient for it, so its gradient would be silently lost. Pass it to "
                f"{app.name}.apply(...) as an argument and return its gradient from backward")


def _check_backward(app, grads, placeholders):
    allowed = {id(p) for p in app.saved_ph + app.grad_ph if p is not None}
    forward_ph = {id(p): name for p, name in placeholders}
    leaves = _leaf_symbols(grads)
    captured = [forward_ph[id(leaf)] for leaf in leaves if id(leaf) in forward_ph]
    if captured:
        args = ", ".join(f"'{n}'" for n in captured)
        raise FunctionError(
            f"{app.name}.backward uses a value computed in forward from its argument(s) "
            f"{args} that was not passed to ctx.save_for_backward (kept on ctx or in a "
            "closure). backward may use only what forward saved, the output gradients and "
            "constants, or the next differentiation would treat the value as a constant and "
            "gradients of gradients would be silently wrong: save the value with "
            "ctx.save_for_backward(...); symgrad then makes a saved intermediate a hidden "
            "output of the op, so gradients of gradients stay correct")
    for leaf in leaves:
        if id(leaf) in allowed:
            continue
        raise FunctionError(
            f"{app.name}.backward uses the Tensor '{leaf.name}' (shape {fmt_shape(leaf.shape)}) "
            f"from outside the Function. Pass it to {app.name}.apply(...) as an argument and "
            "save it with ctx.save_for_backward")


def _as_outputs(app, out):
    single = not isinstance(out, (tuple, list))
    items = [out] if single else list(out)
    try:
        return [as_tensor(o, app.name) for o in items], single
    except TypeError:
        raise FunctionError(f"{app.name}.forward must return Tensors (or numbers), got "
                            f"{', '.join(type(o).__name__ for o in items)}") from None


def _apply_symbolic(cls, args):
    n = next(_counter)
    app = Application(cls, _arg_names(cls, len(args)))
    placeholders, fargs, arguments = [], list(args), []
    for pos, a in enumerate(args):
        if isinstance(a, Tensor):
            p = internal_symbol(f"_{app.name}{n}_{app.arg_names[pos]}", a.shape)
            placeholders.append((p, app.arg_names[pos]))
            fargs[pos] = p
            arguments.append(a)
            app.input_positions.append(pos)
    ctx = FunctionCtx([isinstance(a, Tensor) and a.requires_grad for a in args])
    outs, single = _as_outputs(app, call_forward(cls, ctx, fargs))
    to_save = list(ctx.to_save)
    for k, s in enumerate(to_save):
        if s is not None and not isinstance(s, Tensor):
            raise FunctionError(f"{app.name}: save_for_backward takes Tensors or None, got "
                                f"{type(s).__name__} at position {k}; keep other values as "
                                "ctx attributes (ctx.alpha = alpha)")
    _check_forward(app, outs + to_save, [p for p, _ in placeholders])

    # Replay the forward on the real arguments.
    mapping = {id(p): a for (p, _), a in zip(placeholders, arguments)}
    replayed = substitute(outs + to_save, mapping)
    values, saved_values = replayed[:len(outs)], replayed[len(outs):]
    nondiff = {id(o) for o in ctx.non_differentiable if isinstance(o, Tensor)}
    differentiable = [k for k, (o, v) in enumerate(zip(outs, values))
                      if id(o) not in nondiff and v.kind != "bool"]
    out_index = {id(outs[k]): j for j, k in enumerate(differentiable)}

    # Where each saved tensor comes from: an output, an argument, or an intermediate,
    # which becomes an input of the custom nodes (a hidden output of the application).
    ph_index = {id(p): i for i, (p, _) in enumerate(placeholders)}
    hidden = []
    for s, v in zip(to_save, saved_values):
        if s is None:
            app.saved_from.append(None)
        elif id(s) in out_index:
            app.saved_from.append(("value", out_index[id(s)]))
        elif id(s) in ph_index:
            app.saved_from.append(("arg", ph_index[id(s)]))
        else:
            app.saved_from.append(("hidden", len(hidden)))
            hidden.append(v)
    app.n_values, app.n_args = len(differentiable), len(arguments)
    app.saved_ph = [None if s is None else
                    internal_symbol(f"_{app.name}{n}_saved{k}", s.shape)
                    for k, s in enumerate(to_save)]
    app.grad_ph = [internal_symbol(f"_{app.name}{n}_grad{k}", outs[k].shape)
                   for k in differentiable]
    inputs = tuple(values[k] for k in differentiable) + tuple(arguments) + tuple(hidden)

    # Trace backward once, on placeholders.
    ctx.replay(app.saved_ph)
    grad_args = [app.grad_ph[out_index[id(o)]] if id(o) in out_index else zeros(o.shape)
                 for o in outs]
    returned = cls.backward(ctx, *grad_args)
    app.grads = _tensor_grads(app, args, returned)
    _check_backward(app, app.grads, placeholders)

    results = []
    for k, v in enumerate(values):
        if id(outs[k]) in out_index:
            results.append(make("custom", inputs,
                                (("rule", app), ("index", out_index[id(outs[k])]))))
        else:
            results.append(detach(v))
    return results[0] if single else tuple(results)


def _tensor_grads(app, args, returned):
    """backward's result, checked: one entry per argument, None or a Tensor of a shape the
    argument's shape broadcasts to (summed back to it); kept for Tensor arguments."""
    grads = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    if len(grads) < len(args) or any(g is not None for g in grads[len(args):]):
        raise FunctionError(f"{app.name}.backward returned {len(grads)} gradient(s) but "
                            f"forward takes {len(args)} argument(s) "
                            f"({', '.join(app.arg_names)}); return one per argument, None "
                            "for arguments without a gradient")
    out = []
    for pos, (a, g) in enumerate(zip(args, grads)):
        name = app.arg_names[pos]
        if not isinstance(a, Tensor):
            if g is not None:
                raise FunctionError(f"{app.name}.backward returned a gradient for argument "
                                    f"{pos} ('{name}'), which is not a Tensor; return None")
            continue
        if g is None:
            out.append(None)
            continue
        try:
            g = as_tensor(g, app.name)
        except TypeError:
            raise FunctionError(f"{app.name}.backward returned a {type(g).__name__} for "
                                f"argument '{name}'; return a Tensor or None") from None
        if not shapes_equal(g.shape, a.shape):
            try:
                ok = shapes_equal(broadcast_shapes(g.shape, a.shape), g.shape)
            except ShapeError:
                ok = False
            if not ok:
                raise ShapeError(f"{app.name}.backward returned a gradient of shape "
                                 f"{fmt_shape(g.shape)} for argument '{name}' of shape "
                                 f"{fmt_shape(a.shape)}; it must have the argument's shape")
            g = sum_to(g, a.shape)
        out.append(g)
    return out


# ----- torch tensors -------------------------------------------------------------------

torch_adapter = Slot("running an sg.Function on torch tensors", "symgrad.torchfront")
