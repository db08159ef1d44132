"""Codegen: what a machine runs. Programs assembled into Python functions for a backend
(one ``Backend`` object per target, in ``backends``), compiled or as standalone source;
and sg ops computing on numbers, arrays and tensors with the same code (``numeric``)."""
from . import numeric  # noqa: F401  (fills core's slot for computing ops on values)
from .backends import BACKENDS, backend
from .compile import compile_function, source
from .emit import build_source

__all__ = ["BACKENDS", "backend", "build_source", "compile_function", "source"]
