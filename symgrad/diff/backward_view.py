"""The backward graph behind ``y.grad_fn``, as PyTorch shows it.

``y.grad_fn`` is a view of the node that made ``y``: ``name()`` ("MulBackward0", or
"ExpBackward" for an ``sg.Function``), ``next_functions`` (one ``(view, output_nr)`` per
input: the input's own ``grad_fn``, an ``AccumulateGrad`` for a symbol, ``None`` for an
input that carries no gradient), and ``saved``: the symbolic values the rule's VJP
formulas read, named like PyTorch's ``_saved_other``. Only inputs that need a gradient
count: for ``e = c * d`` with ``d`` a constant, ``saved`` is ``{"_saved_y": d}``.

Views are cached in the node's ``backward_view`` slot, so ``next_functions[0][0] is
x.grad_fn`` holds as in PyTorch, and walking a graph is linear.
"""
from ..core import extensions
from ..core.opdef import OPS, camel
from ..errors import SymgradError, UnsupportedOpError
from .reverse import rule_for

_NO_GRAD = False  # cached in Tensor.backward_view: the node carries no gradient
# PyTorch's names for the first and second input of a backward (``_saved_other`` in
# PyTorch's grad_fn); None when that input is not saved, as in PyTorch.
TORCH_NAMES = {"_saved_self": 0, "_saved_other": 1}


class BackwardNode:
    """The backward function of one op node (PyTorch's ``<op>Backward0``)."""

    def __init__(self, node):
        self.tensor = node

    def name(self):
        return f"{camel(self.tensor.op)}Backward0"

    @property
    def requires_grad(self):
        return True

    def _rule(self):
        try:
            return rule_for(self.tensor)
        except UnsupportedOpError:
            return None

    def _positions(self):
        """Positions of the inputs the backward sends gradient to."""
        rule = self._rule()
        return {i for i in range(len(self.tensor.inputs))
                if rule is None or rule.input_differentiable(i)}

    @property
    def next_functions(self):
        live = self._positions()
        return tuple(_edge(x) if i in live else (None, 0)
                     for i, x in enumerate(self.tensor.inputs))

    @property
    def saved(self):
        """{"_saved_<name>": value} for what the VJP formulas of the inputs that need a
        gradient read: inputs, parameters and ``result`` (the output)."""
        rule = self._rule()
        if rule is None or not hasattr(rule, "vjp"):
            return {}
        used = set()
        for i in self._positions():
            formula = rule.vjp[rule.inputs[i]]
            if requires_grad(self.tensor.inputs[i]) and hasattr(formula, "names"):
                used |= formula.names
        node, out = self.tensor, {}
        for name, x in zip(rule.inputs, node.inputs):
            if name in used:
                out[f"_saved_{name}"] = x
        for name in rule.params:
            if name in used:
                out[f"_saved_{name}"] = node.attrs.get(name)
        if "result" in used:
            out["_saved_result"] = node
        return out

    def __getattr__(self, name):
        if name.startswith("_saved_"):
            saved = self.saved
            if name in saved:
                return saved[name]
            position = TORCH_NAMES.get(name)
            rule = self._rule()
            if position is not None and rule is not None and position < len(rule.inputs):
                return saved.get(f"_saved_{rule.inputs[position]}")
        raise AttributeError(f"'{self.name()}' has no attribute '{name}'")

    def __call__(self, grad):
        """The backward applied to ``grad``: one gradient (or None) per input."""
        rule, live = self._rule(), self._positions()
        if rule is None:
            raise UnsupportedOpError(f"no derivative rule for op '{self.tensor.op}'")
        return tuple(rule.apply_vjp(self.tensor, i, grad) if i in live else None
                     for i in range(len(self.tensor.inputs)))

    def __repr__(self):
        return f"<{self.name()} object>"


class FunctionBackward(BackwardNode):
    """The backward of an ``sg.Function`` application, shared by all its outputs (as in
    PyTorch, where they differ by ``output_nr``). ``tensor`` is its first output."""

    def __init__(self, node):
        self.app = node.attrs["rule"]
        self.tensor = node

    def name(self):
        return f"{self.app.name}Backward"

    @property
    def outputs(self):
        return self.app.outputs(self.tensor)

    @property
    def next_functions(self):
        app = self.app
        return tuple(_edge(x) if app.input_differentiable(app.n_values + i) else (None, 0)
                     for i, x in enumerate(app.arguments(self.tensor)))

    @property
    def saved_tensors(self):
        """What forward saved, as outer graph values (inputs, outputs, hidden outputs)."""
        return self.app.saved(self.tensor)

    @property
    def hidden_outputs(self):
        """Saved intermediates, promoted to outputs so double backward is correct."""
        return tuple(self.app.hidden(self.tensor))

    @property
    def saved(self):
        return {"saved_tensors": self.saved_tensors}

    def __call__(self, *grads):
        outputs = self.outputs
        if len(grads) != len(outputs):
            raise SymgradError(f"{self.name()} takes {len(outputs)} gradient(s), "
                               f"one per output; got {len(grads)}")
        total = [None] * self.app.n_args
        for node, g in zip(outputs, grads):
            if g is None:
                continue
            for k, v in enumerate(self.app.vjps(node, g)):
                if v is not None:
                    total[k] = v if total[k] is None else total[k] + v
        return tuple(total)


class AccumulateGrad:
    """Where the gradient of a leaf symbol ends up (PyTorch's ``AccumulateGrad``)."""

    next_functions = ()
    saved = {}

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad object>"


def _state(node):
    """The cached view of ``node`` (or _NO_GRAD), computed bottom-up without recursion."""
    stack = [node]
    while stack:
        n = stack[-1]
        if n.backward_view is not None:
            stack.pop()
            continue
        pending = [i for i in n.inputs if i.backward_view is None]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        n.backward_view = _compute(n)
    return node.backward_view


def _compute(n):
    if n.is_symbol:
        return AccumulateGrad(n)
    if not n.inputs:
        return _NO_GRAD
    try:
        rule = rule_for(n)
    except UnsupportedOpError:
        rule = None
    if not any((rule is None or rule.input_differentiable(i)) and i_node.backward_view is not _NO_GRAD
               for i, i_node in enumerate(n.inputs)):
        return _NO_GRAD
    if OPS[n.op].node_rule:
        first = n.attrs["rule"].outputs(n)[0]   # one view for all outputs, as in torch
        if first.backward_view is None:
            first.backward_view = FunctionBackward(first)
        return first.backward_view
    return BackwardNode(n)


def requires_grad(node):
    """True when ``node`` depends differentiably on a symbol (PyTorch's ``requires_grad``)."""
    return _state(node) is not _NO_GRAD


def _edge(x):
    """The ``(function, output_nr)`` pair for input ``x`` in ``next_functions``."""
    state = _state(x)
    if state is _NO_GRAD:
        return (None, 0)
    return (state, x.attrs.get("index", 0) if OPS[x.op].node_rule else 0)


def grad_fn(node):
    """``node.grad_fn``: the view of its backward, None for leaves and for values that
    carry no gradient (constants, comparisons, detached values), as in PyTorch."""
    state = _state(node)
    if state is _NO_GRAD or isinstance(state, AccumulateGrad):
        return None
    return state


extensions.grad_fn.provide(grad_fn)
extensions.requires_grad.provide(requires_grad)
