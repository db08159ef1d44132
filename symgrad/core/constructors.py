"""Constant arrays by shape, as torch's factories: ``sg.zeros``, ``sg.ones``, ``sg.full`` and
their ``_like`` forms. Dims are ints or names (or symbolic dims such as ``x.shape[0]``);
each is a ``const`` node (``core.build``), with no gradient."""
from typing import Any

import sympy

from .build import as_tensor, const
from .graph import Tensor
from .types import ShapeLike, TensorLike


def zeros(*shape: Any) -> Tensor:
    """An array of zeros; dims are ints or names, as one tuple or as arguments
    (``sg.zeros(("n", 3))`` or ``sg.zeros("n", 3)``), as in ``torch.zeros``. Its gradient
    is nothing: it is a constant.

    Example:

    >>> import symgrad as sg
    >>> sg.zeros(("n", 3))
    Tensor(zeros((n, 3)), shape=(n, 3))
    >>> import numpy as np
    >>> sg.zeros(2, 3).shape
    (2, 3)
    """
    return const(sympy.S.Zero, _sizes(shape))


def ones(*shape: Any) -> Tensor:
    """An array of ones (``sg.ones("n")`` is the all-ones vector 𝟙 of length n); the
    shape is one tuple or the dims as arguments (``sg.ones("m", "n")``), as in torch.

    Example:

    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> print(sg.grad_fn(lambda v: sg.sum(v * sg.ones("n")), shapes={"v": ("n",)}))
    df/dv = 𝟙    [shape (n,)]
    """
    return const(sympy.S.One, _sizes(shape))


def full(shape: ShapeLike, value: float | sympy.Expr) -> Tensor:
    """An array filled with ``value``, a number or an expression of dims
    (``sg.full(("n",), 0.5)``), as in ``torch.full``.

    Example:

    >>> import symgrad as sg
    >>> sg.full(("n",), 0.5)
    Tensor(full((n,), 0.5), shape=(n,))
    """
    return const(value, _sizes((shape,)))


def _sizes(shape):
    """The dims given as one shape (a tuple or list), or as arguments (each an int, a name
    or a symbolic dim such as ``x.shape[0]``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def zeros_like(x: TensorLike) -> Tensor:
    """Zeros of ``x``'s shape (symbolic dims too).

    Example:

    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n", 2))
    >>> sg.zeros_like(v).shape
    (n, 2)
    """
    return zeros(as_tensor(x, "zeros_like").shape)


def ones_like(x: TensorLike) -> Tensor:
    """Ones of ``x``'s shape (symbolic dims too).

    Example:

    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.ones_like(v)
    Tensor(ones((n,)), shape=(n,))
    """
    return ones(as_tensor(x, "ones_like").shape)


def full_like(x: TensorLike, value: float | sympy.Expr) -> Tensor:
    """``value`` filling ``x``'s shape (symbolic dims too).

    Example:

    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.full_like(v, 3.0)
    Tensor(full((n,), 3), shape=(n,))
    """
    return full(as_tensor(x, "full_like").shape, value)
