"""Compiling generated source into a function whose globals hold only its backend's
modules and its own constant arrays."""
from ..core.build import gc_paused
from ..errors import ArgumentError, EvaluationError
from .backends import backend as backend_named
from . import heap, source_lines, threads
from .emit import build_source
from . import numba_compile

# backends with a pipeline of their own: name -> (compile_function, source)
PIPELINES = {"numba": (numba_compile.compile_function, numba_compile.source)}


@gc_paused
def compile_function(outputs, inputs, backend, func_name="gradient", with_value=None,
                     zero_shapes=None):
    """``outputs`` as a function of ``inputs`` for ``backend`` (a name), compiled; see
    ``build_source``. Its captured arrays live in its own namespace and die with it."""
    target = backend_named(backend)
    if target.blas_threads:
        threads.configure()
        heap.configure()
    if target.name in PIPELINES:
        return PIPELINES[target.name][0](target, outputs, inputs, func_name, with_value,
                                         zero_shapes)
    if hasattr(target, "compile_function"):   # a backend that builds its own function
        from . import emit                      # from emit's parts, and NumPy's as fallback
        return target.compile_function(
            emit, lambda: compile_function(outputs, inputs, "numpy", func_name, with_value,
                                           zero_shapes),
            outputs, inputs, func_name, with_value, zero_shapes)
    src, arrays = build_source(outputs, inputs, target, func_name, with_value, zero_shapes,
                               standalone=False, lazy_fallback=True)
    return load(src, arrays, target, func_name)


def load(src, arrays, target, func_name):
    """The function ``func_name`` defined by generated ``src`` for backend ``target``,
    with the captured ``arrays`` in its namespace."""
    namespace = target.namespace()
    namespace["ArgumentError"] = ArgumentError
    namespace["EvaluationError"] = EvaluationError
    namespace.update({name: target.array_constant(value) for name, value in arrays.items()})
    return source_lines.define(src, namespace, func_name, target.name)


def source(outputs, inputs, backend, func_name="gradient", with_value=None, zero_shapes=None):
    """Standalone source of the function (imports its backend's modules only)."""
    target = backend_named(backend)
    if target.name in PIPELINES:
        return PIPELINES[target.name][1](target, outputs, inputs, func_name, with_value,
                                         zero_shapes)
    if hasattr(target, "compile_function"):
        raise ArgumentError(f"the {backend} backend builds native code, not standalone Python "
                            "source; compiled functions carry their C as "
                            "fn.__symgrad_c_source__, and source('numpy') gives the Python")
    src, _ = build_source(outputs, inputs, backend_named(backend), func_name, with_value,
                          zero_shapes)
    return src
