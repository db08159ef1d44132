"""Derivatives of any order: ``Derivative(f, order, wrt, shapes)``, the object behind
``symgrad --order N``.

Order 1 is the Jacobian (the gradient of a scalar function), order 2 the Hessian, and
order N the Jacobian of the order N-1 blocks, taken in forward mode (each step adds the
axes of one input to a block that already has the output's and the earlier inputs').
Mixed partial derivatives of a smooth function do not depend on the order of
differentiation, so only one block per multiset of inputs is built: for inputs x, y
and order 3 the blocks are d³f/dx³, d³f/dx²dy, d³f/dxdy², d³f/dy³ (4, not 8). Block
``d^N f/dx_i1...dx_iN`` (i1 <= ... <= iN) has shape ``f.shape + x_i1.shape + ... +
x_iN.shape``.
"""
from typing import Any

from ..diff.batching import jacfwd, jacobian_blocks
from ..errors import ArgumentError
from .derivative import Block
from .transforms import _Transformed, _latex_name, _latex_out, _out_label, _grad_enabled

_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power(n):
    return "" if n == 1 else str(n).translate(_SUPERSCRIPTS)


def _runs(combo):
    """[(index, multiplicity)] of a nondecreasing tuple of indices."""
    out: list[tuple[int, int]] = []
    for i in combo:
        if out and out[-1][0] == i:
            out[-1] = (i, out[-1][1] + 1)
        else:
            out.append((i, 1))
    return out


class Derivative(_Transformed):
    """The ``order``-th derivative of ``f`` w.r.t. ``wrt`` (default every parameter), with
    the views of ``GradFn`` (text, LaTeX, program, compile, source); one block per
    multiset of inputs, in lexicographic order of their positions in ``wrt``."""

    @_grad_enabled
    def __init__(self, f, order, wrt=None, shapes=None):
        if not isinstance(order, int) or isinstance(order, bool) or order < 1:
            raise ArgumentError(f"the order of a derivative is a positive int, got {order!r}")
        super().__init__(f, wrt, shapes, has_aux=False)
        self.order = order
        first = jacobian_blocks(self.outputs, self.wrt)
        # level[combo][k]: the block of output k for the nondecreasing index tuple combo
        level: dict[tuple[int, ...], list[Any]] = {
            (j,): [row[j] for row in first] for j in range(len(self.wrt))}
        for _ in range(order - 1):
            nxt: dict[tuple[int, ...], list[Any]] = {}
            for combo, nodes in level.items():
                xs = self.wrt[combo[-1]:]
                live = [n for n in nodes if n is not None]
                cols = iter(jacfwd(live, xs)) if live else iter(())
                per_out = [[None] * len(xs) if n is None else next(cols) for n in nodes]
                for j in range(len(xs)):
                    nxt[combo + (combo[-1] + j,)] = [row[j] for row in per_out]
            level = nxt
        self.combos = sorted(level)
        self.blocks = [[level[c][k] for c in self.combos] for k in range(len(self.outputs))]

    def _labels(self, combo, name, tex):
        n = self.order
        runs = _runs(combo)
        text = "".join(f"d{self.wrt[i].name}{_power(m)}" for i, m in runs)
        latex = " ".join(rf"\partial {_latex_name(self.wrt[i].name)}"
                         + (f"^{{{m}}}" if m > 1 else "") for i, m in runs)
        if n == 1:
            return f"d{name}/{text}", rf"\frac{{\partial {tex}}}{{{latex}}}"
        return (f"d{_power(n)}{name}/{text}",
                rf"\frac{{\partial^{{{n}}} {tex}}}{{{latex}}}")

    def _blocks(self):
        out = []
        for k, (o, row) in enumerate(zip(self.outputs, self.blocks)):
            name = _out_label(self.name, k, self.several)
            tex = _latex_out(self.name, k, self.several)
            for combo, node in zip(self.combos, row):
                label, latex = self._labels(combo, name, tex)
                names = [self.wrt[i].name for i in combo]
                shape = o.shape + sum((self.wrt[i].shape for i in combo), ())
                out.append(Block(self._key(k, names), label, latex, node, shape))
        return out

    def _func_name(self):
        return f"d{self.order}_{self.name if self.name.isidentifier() else 'f'}"

    def _structure(self, values):
        n = len(self.combos)
        rows = [values[k * n:(k + 1) * n] for k in range(len(self.outputs))]
        return [r[0] if n == 1 else tuple(r) for r in rows]
