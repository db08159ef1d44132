"""The source text of module-level functions, for generated code that calls them as helpers
(an op's NumPy kernel is the tested function itself, written into the generated source).

``inspect.getsource`` tokenizes the module once per function asked for; the op families ask
for about forty functions when ``import symgrad`` runs, which made that a tenth of the
import. The code object already knows the span: its first line, and the last line any of
its instructions (or those of the functions and comprehensions inside it) comes from."""
import inspect
import linecache


def _last_line(code):
    last = max((end for _, end, _, _ in code.co_positions() if end), default=code.co_firstlineno)
    for const in code.co_consts:
        if inspect.iscode(const):
            last = max(last, _last_line(const))
    return last


def function_source(fn):
    """The source of ``fn``, a module-level function (as ``inspect.getsource`` gives it)."""
    code = fn.__code__
    lines = linecache.getlines(code.co_filename)
    if not lines or not hasattr(code, "co_positions"):     # co_positions: Python 3.11+
        return inspect.getsource(fn)
    return "".join(lines[code.co_firstlineno - 1:_last_line(code)])
