"""``compile("c")`` of a rolled gradient of scalars: one C function with a loop over the
body and one over its VJP (``rolled_native``), built by ``c_build`` like any kernel."""
from ...errors import ArgumentError, EvaluationError
from .. import source_lines
from .c_build import load
from .c_printer import PRELUDE
from .rolled_native import CSyntax, function_lines, wrapper_source


def compile_rolled(emit, body, numpy_backend, templates, name, with_value):
    """The compiled function of ``body`` (a ``codegen.rolled.RolledBody`` that
    ``rolled_native.native`` accepts)."""
    lines, count, n_out = function_lines(body, templates, CSyntax(), with_value)
    definition = "\n".join(lines) + "\n"
    n_in = len(body.plan.inputs)
    lib, ffi = load(f"int sg_r({', '.join(['double'] * n_in + ['double *restrict'])});",
                    PRELUDE + "\n" + definition, count, count)
    call = [f"_o = _new('double[{n_out}]')",
            f"if _k({', '.join([emit.Argument(x).code for x in body.plan.inputs] + ['_o'])}):",
            f"    raise MemoryError('{name}: no memory for the values of {body.plan.steps} "
            "steps')"]
    text = wrapper_source(emit, body, numpy_backend, name, call, with_value)
    namespace = numpy_backend.namespace()
    namespace.update({"ArgumentError": ArgumentError, "EvaluationError": EvaluationError,
                      "_new": ffi.new, "_k": lib.sg_r})
    fn = source_lines.define(text, namespace, name, "c")
    fn.__symgrad_c_source__ = PRELUDE + "\n" + definition
    return fn
