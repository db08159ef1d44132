"""TorchFront: PyTorch code in. torch functions and Tensor methods on symbolic Tensors
(``dispatch`` and the mappings in ``pointwise``, ``linalg``, ``shape``, ``functional``,
``gather``, ``conv``, ``pool``, ``norm``, ``recurrent``), torch factories with symbolic
sizes (``factories``), nn.Modules as functions of symbols (``module``), and
``sg.Function`` on torch tensors (``autograd_function``). torch itself is imported only
when a mapping needs it."""
from . import activation_internals, autograd_function, conv, ctc, dispatch  # noqa: F401
from . import distances, factories, functional, gather, linalg, losses, masked  # noqa: F401
from . import native_norm, norm, pointwise, pool, products, recurrent  # noqa: F401
from . import refusals, scatter, segment, shape, sorting, statistics  # noqa: F401
from .dispatch import supported  # noqa: F401
