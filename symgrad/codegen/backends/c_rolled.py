"""A rolled gradient of scalars as one C function (``compile("c")`` of a program whose
trace repeats a body, ``codegen.rolled``): the head, a ``for`` loop over the body that
saves the values its VJP reads in one malloc'd block, the tail and its VJP, a ``for``
loop over the body's VJP in reverse, the head's VJP. Every statement is a C template
(``c_printer``), so the source is as long as one copy of the body whatever the number of
steps, and the compiler's time with it (a straight-line gradient of a 1000-step chain is
12 000 statements, seconds of compiling).

The Python function around it is the C backend's for programs of scalars: Python floats
go straight to the C function, anything else through the NumPy backend's checks first.
"""
import itertools

from sympy.printing.codeprinter import PrintMethodNotImplementedError

from ...core.graph import topo_order
from ...core.opdef import OPS
from ...core.program import Program
from ...errors import ArgumentError, EvaluationError, RegistryError
from .. import source_lines
from ..names import code_name
from .c_build import load
from .c_printer import PRELUDE

_counter = itertools.count()


def plan_nodes(plan):
    """Every node of the rolled gradient's graphs (head, body, tail, their VJPs)."""
    pieces = (list(plan.inits) + list(plan.invariants) + list(plan.carry_out)
              + list(plan.residuals) + list(plan.cot_finals) + list(plan.tail_grads)
              + [plan.value] + list(plan.cot_in) + list(plan.cot_contributions)
              + list(plan.grads))
    return topo_order([n for n in pieces if n is not None])


def all_scalar(plan):
    return not any(x.shape for x in plan.inputs) and all(
        x.kind == "float" for x in plan.inputs) and not any(n.shape for n in plan_nodes(plan))


class _Names:
    """C names for the Python names of a ``RolledBody``: ``a<j>`` for the arguments,
    ``v<k>`` for every other value (user names never reach C)."""

    def __init__(self, inputs):
        self.names = {code_name(x.name): f"a{j}" for j, x in enumerate(inputs)}
        self.count = itertools.count()

    def __call__(self, name):
        found = self.names.get(name)
        if found is None:
            found = self.names[name] = f"v{next(self.count)}"
        return found


def _source(body, templates, outputs, with_value):
    """(C definition of ``sg_r``, number of statements)."""
    p = body.plan
    printer = templates.printer
    head, forward, tail, backward, grads = body.programs
    c = _Names(p.inputs)
    count = 0

    def statements(prog, indent):
        nonlocal count
        lines = []
        for name, node, operands in prog.statements:
            tpl = templates.template(node, operands)
            text = tpl.fill([c(n) if n is not None else None for n in operands])
            lines.append(f"{indent}const double {c(name)} = {text};")
            count += 1
        return lines

    def value(prog, node):
        if node is None:
            return "0.0"
        if node.is_const and not node.shape:
            return printer.doprint(node.attrs["value"])
        return c(prog.names[id(node)])

    def assign(targets, values, indent):
        news = [f"n{j}" for j in range(len(targets))]
        return ([f"{indent}{{"] + [f"{indent}    const double {n} = {v};"
                                   for n, v in zip(news, values)]
                + [f"{indent}    {t} = {n};" for t, n in zip(targets, news)] + [f"{indent}}}"])

    steps, saved = p.steps, [forward.names[id(r)] for r in p.residuals]
    width = len(saved)
    params = [f"double a{j}" for j in range(len(p.inputs))] + ["double *restrict out"]
    lines = [f"int sg_r({', '.join(params)}) {{"]
    lines += statements(head, "    ")
    carries = [c(f"_lc{j}") for j in range(len(p.carry_out))]
    lines += [f"    double {t} = {value(head, n)};" for t, n in zip(carries, p.inits)]
    lines.append("    double *ls = NULL;")
    if width:
        lines.append(f"    ls = (double *)malloc(sizeof(double) * {steps * width});")
        lines.append("    if (!ls) return 1;")
    lines.append(f"    for (long k = 0; k < {steps}; k++) {{")
    lines += statements(forward, "        ")
    lines += [f"        ls[k * {width} + {j}] = {c(n)};" for j, n in enumerate(saved)]
    lines += assign(carries, [value(forward, n) for n in p.carry_out], "        ")
    lines.append("    }")
    lines += statements(tail, "    ")
    floats = [j for j, s in enumerate(p.cot_out) if s is not None]
    cots = [c(f"_lg{j}") for j in floats]
    accs = [c(f"_lv{j}") for j in range(len(p.cot_targets))]
    lines += [f"    double {t} = {value(tail, p.cot_finals[j])};" for t, j in zip(cots, floats)]
    lines += [f"    double {t} = 0.0;" for t in accs]
    if cots or accs:
        lines.append(f"    for (long k = {steps - 1}; k >= 0; k--) {{")
        lines += [f"        const double {c(n)} = ls[k * {width} + {j}];"
                  for j, n in enumerate(body.restored)]
        lines += statements(backward, "        ")
        news = [value(backward, p.cot_in[j]) for j in floats]
        news += [t if n is None else f"{t} + {value(backward, n)}"
                 for t, n in zip(accs, p.cot_contributions)]
        lines += assign(cots + accs, news, "        ")
        lines.append("    }")
    lines.append("    free(ls);")
    lines += statements(grads, "    ")
    results = list(outputs) + ([with_value] if with_value is not None else [])
    names = grads.names
    for j, node in enumerate(results):
        code = value(grads, node) if node is None or node.is_const else c(names[id(node)])
        lines.append(f"    out[{j}] = {code};")
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n", count, len(p.inputs), len(results)


def compile_rolled(emit, body, numpy_backend, templates, func_name, with_value, zero_shapes):
    """The compiled function of ``body`` (a ``codegen.rolled.RolledBody`` of scalars whose
    every statement has a C template)."""
    p = body.plan
    outputs = body.outputs
    definition, count, n_in, n_out = _source(body, templates, outputs, with_value)
    signature = (f"int sg_r({', '.join(['double'] * n_in + ['double *restrict'])});")
    lib, ffi = load(signature, PRELUDE + "\n" + definition, count, count)
    args = [emit.Argument(x) for x in p.inputs]
    name = func_name
    value_slot = f"_o[{len(outputs)}]"

    def result_code():
        """The results as Python floats: the slots of _o, 0.0 for a known zero."""
        parts = ["0.0" if o is None else f"_o[{j}]" for j, o in enumerate(outputs)]
        tup = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return f"({value_slot}, {tup})" if with_value is not None else tup

    unpack = ", ".join(a.code for a in args) + ("," if len(args) == 1 else "") + " = args"
    names = ", ".join(x.name for x in p.inputs)
    count_msg = emit.say(f"{name}() takes {len(args)} arguments ({names}), got ",
                         emit.Code("len(args)"))
    preamble = {}
    head = [f"if len(args) != {len(args)}:", f"    raise ArgumentError({count_msg})"]
    if args:
        head.append(unpack)
    head += emit._arguments_code(args, numpy_backend, {}, preamble)
    call = ", ".join([a.code for a in args] + ["_o"])
    kernel = [f"_o = _new('double[{n_out}]')",
              f"if _k({call}):",
              f"    raise MemoryError('{name}: no memory for the values of {p.steps} steps')"]
    body_lines = kernel + [f"return {numpy_backend.result(result_code(), args)}"]
    checked = head + emit._translated_errors(body_lines, name)
    test = " and ".join(f"type({a.code}) is float" for a in args) or "True"
    fast = [f"if len(args) == {len(args)}:"]
    if args:
        fast.append("    " + unpack)
    fast += [f"    if {test}:"] + ["        " + line for line in kernel] + [
        f"        return {result_code()}"]
    src = [numpy_backend.argument_helper] + list(preamble.values())
    src += ["", "def _checked(*args):"] + ["    " + line for line in checked]
    src += ["", f"def {name}(*args):"] + ["    " + line for line in fast]
    src += ["    return _checked(*args)"]
    text = "\n".join(src) + "\n"
    namespace = numpy_backend.namespace()
    namespace.update({"ArgumentError": ArgumentError, "EvaluationError": EvaluationError,
                      "_new": ffi.new, "_k": lib.sg_r})
    filename = f"<symgrad-c-{next(_counter)}>"
    source_lines.remember(filename, text)
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - generated by us
    fn = namespace[name]
    fn.__symgrad_c_source__ = PRELUDE + "\n" + definition
    return fn


def native(plan, templates, kinds):
    """Whether the rolled gradient is of scalars only (no captured arrays) and every
    statement is a pointwise op on values of ``kinds`` with a C template."""
    if not all_scalar(plan) or any(n.op == "array" for n in plan_nodes(plan)):
        return False
    targets = [n for n in plan_nodes(plan) if n.inputs]
    prog = Program(targets, plan.inputs, input_name=lambda x: code_name(x.name))
    for _, node, operands in prog.statements:
        if not OPS[node.op].pointwise or node.kind not in kinds or any(
                i.kind not in kinds for i in node.inputs):
            return False
        try:
            templates.template(node, operands)
        except (PrintMethodNotImplementedError, RegistryError, KeyError, TypeError,
                ValueError, AttributeError):
            return False
    return True
