"""TorchFront: PyTorch code in. torch functions and Tensor methods on symbolic Tensors
(``dispatch`` and the mappings in ``pointwise``, ``linalg``, ``shape``, ``functional``,
``gather``, ``conv``, ``pool``, ``norm``, ``recurrent``), torch factories with symbolic
sizes (``factories``), nn.Modules as functions of symbols (``module``), and
``sg.Function`` on torch tensors (``autograd_function``). torch itself is imported only
when a mapping needs it."""
from . import autograd_function, conv, dispatch, factories, functional, gather  # noqa: F401
from . import linalg, norm, pointwise, pool, recurrent, refusals, shape, special  # noqa: F401
from .dispatch import supported  # noqa: F401
