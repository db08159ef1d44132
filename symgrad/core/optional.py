"""Optional dependencies: torch is the ``symgrad[torch]`` extra. symgrad's ops, formulas
and the NumPy backend work without it; what needs it asks for it here, so a missing
torch is a SymgradError that says how to install it, not a bare ImportError."""
import importlib

from ..errors import SymgradError


class MissingDependencyError(SymgradError, ImportError):
    """A feature needs an optional package that is not installed."""


def require_torch(feature):
    """The torch module, or a MissingDependencyError naming ``feature``."""
    try:
        return importlib.import_module("torch")
    except ImportError as e:
        raise MissingDependencyError(
            f"{feature} needs PyTorch, which is not installed here; install it with "
            "pip install 'symgrad[torch]' (symgrad's own ops, formulas and the NumPy "
            "backend work without it)") from e
