"""Skipping the tests of an optional backend whose dependency is missing here: jax, numba,
or for "c" cffi and a C compiler (the README's install has none of them; CI has all)."""
import pytest

MODULES = {"jax": "jax", "numba": "numba", "c": "cffi", "torch": "torch"}


def require_backend(name):
    """Skip the calling test unless ``compile(name)`` can work here."""
    if name == "numpy":
        return
    pytest.importorskip(MODULES.get(name, name))
    if name == "c":
        from symgrad.codegen.backends import c_build
        try:
            c_build.compiler()
        except c_build.CompilerError as e:
            pytest.skip(str(e))
