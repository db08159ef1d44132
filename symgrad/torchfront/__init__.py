"""TorchFront: PyTorch code in. torch functions and Tensor methods on symbolic Tensors:
``dispatch`` routes them, and each other module maps one family (``pointwise``,
``special``, ``linalg``, ``decomp``, ``products``, ``distances``,
``shape``, ``views``, ``strided``, ``calculus``, ``gather``, ``scatter``, ``segment``,
``sorting``, ``statistics``, ``masked``, ``functional``, ``losses``, ``ctc``, ``norm``,
``native_norm``, ``conv``, ``pool``, ``unpool``, ``grid``, ``recurrent``, ...); torch
factories with symbolic sizes (``factories``); refusals by design (``refusals``);
nn.Modules as functions of symbols (``module``); ``sg.Function`` on torch tensors
(``autograd_function``). torch itself is imported only when a mapping needs it."""
from . import activation_internals, autograd_function, calculus, conv, ctc  # noqa: F401
from . import decomp, dispatch, distances, factories, functional, gather, grid  # noqa: F401
from . import linalg, losses, masked, native_norm, norm, pointwise, pool  # noqa: F401
from . import products, recurrent, refusals, scatter, segment, shape, sorting  # noqa: F401
from . import special, statistics, strided, unpool, views  # noqa: F401
from . import distributions, sympy_guard  # noqa: F401
from .dispatch import supported  # noqa: F401
