"""The code backends, by name: ``backend("numpy")``. An unknown name is an
``ArgumentError`` listing the known ones."""
from ...errors import ArgumentError
from .math import MathBackend
from .numba import NumbaBackend
from .numpy import NumpyBackend
from .torch import TorchBackend
from .jax import JaxBackend
from .c import CBackend

# jax, numba and cffi are imported when a function is compiled for them
BACKENDS = {b.name: b for b in (NumpyBackend(), TorchBackend(), JaxBackend(), NumbaBackend(),
                                CBackend())}
INTERNAL = {b.name: b for b in (MathBackend(),)}   # used by other backends only


def backend(name):
    """The Backend object called ``name`` ("numpy", "torch", "jax", ...)."""
    found = BACKENDS.get(name) if isinstance(name, str) else None
    if found is not None:
        return found
    raise ArgumentError(f"unknown backend {name!r}; the backends are "
                        f"{', '.join(repr(b) for b in sorted(BACKENDS))}")


def internal(name):
    return INTERNAL[name]
