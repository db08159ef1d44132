"""The code backends, by name: ``backend("numpy")``. An unknown name is an
``ArgumentError`` listing the known ones."""
from ...errors import ArgumentError
from .math import MathBackend
from .numpy import NumpyBackend
from .torch import TorchBackend
from .c import CBackend

BACKENDS = {b.name: b for b in (NumpyBackend(), TorchBackend(), CBackend())}
INTERNAL = {b.name: b for b in (MathBackend(),)}   # used by other backends only


def backend(name):
    """The Backend object called ``name`` ("numpy", "torch")."""
    found = BACKENDS.get(name) if isinstance(name, str) else None
    if found is not None:
        return found
    raise ArgumentError(f"unknown backend {name!r}; the backends are "
                        f"{', '.join(repr(b) for b in sorted(BACKENDS))}")


def internal(name):
    return INTERNAL[name]
