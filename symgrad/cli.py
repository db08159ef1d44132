"""The ``symgrad`` command: the gradient of a function in a Python file.

    symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n --shape b=m
    symgrad examples/mlp_cli.py:loss ... --latex | --program | --emit numpy | --check

The file is run with ``runpy`` (it is the user's own code; no string is ever ``eval``-ed)
and ``FUNC`` is looked up in its namespace. Bad arguments, a missing file or function and
symgrad errors while tracing print one line ``symgrad: error: ...`` and exit with 2, as
argparse does; a failed ``--check`` prints ``symgrad: check failed: ...`` and exits with 1.
"""
import argparse
import os
import runpy
import sys

from .errors import CheckError, SymgradError

USAGE_EXIT = 2
CHECK_FAILED_EXIT = 1


class UsageError(SymgradError):
    """A bad FILE:FUNC, a missing file or function, or inconsistent options."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``symgrad: error: <message>``, exit status 2."""

    def error(self, message):
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message}\n")


def _dim(text):
    text = text.strip()
    if text.lstrip("-").isdigit():
        value = int(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"dim {text} is negative")
        return value
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(
            f"dim {text!r} is neither an integer nor a name (use e.g. n or 3)")
    return text


def shape_spec(text):
    """``NAME=d1,d2,...`` -> (NAME, (d1, d2, ...)); ``NAME=`` is a scalar."""
    name, sep, dims = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(
            f"invalid shape {text!r}: expected NAME=d1,d2,... (e.g. W=m,n or x=3; "
            "NAME= for a scalar)")
    if not dims.strip():
        return name, ()
    try:
        return name, tuple(_dim(d) for d in dims.split(","))
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"invalid shape {text!r}: {e}") from None


def dims_spec(text):
    """``m=3,n=2`` -> {"m": 3, "n": 2}."""
    out = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.isidentifier() or not value.isdigit():
            raise argparse.ArgumentTypeError(
                f"invalid dims {text!r}: expected NAME=INT,... (e.g. m=3,n=2)")
        out[name] = int(value)
    return out


def build_parser():
    p = _Parser(
        prog="symgrad",
        description="Print the gradient of a Python function as formulas, LaTeX, a "
                    "straight-line program or NumPy/torch source, or check it against "
                    "torch.autograd.",
        epilog="example: symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n "
               "--shape b=m --check --dims m=3,n=2")
    from . import __version__
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("target", metavar="FILE:FUNC",
                   help="a Python file and the function in it to differentiate")
    p.add_argument("--shape", metavar="NAME=d1,d2", type=shape_spec, action="append",
                   default=[], help="shape of a parameter; dims are ints or names shared "
                                    "across parameters; NAME= (empty) is a scalar; "
                                    "unlisted parameters are scalars or use annotations")
    p.add_argument("--wrt", metavar="NAME", nargs="+", action="extend",
                   help="differentiate only w.r.t. these parameters (default: all)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--latex", action="store_true", help="print LaTeX of the formulas")
    mode.add_argument("--program", action="store_true",
                      help="print the straight-line gradient program")
    mode.add_argument("--emit", choices=("numpy", "torch"),
                      help="print standalone source of the compiled gradient")
    mode.add_argument("--check", action="store_true",
                      help="compare with torch.autograd (orders 1 and 2) and print a report")
    p.add_argument("--dims", metavar="m=3,n=2", type=dims_spec, action="append",
                   help="sizes of symbolic dims for --check (others get small sizes)")
    return p


def _check_source(path):
    """A UsageError unless ``path`` holds text Python can read (not a binary file)."""
    import tokenize
    try:
        with tokenize.open(path) as fh:
            text = fh.read()
    except (UnicodeDecodeError, SyntaxError) as e:
        raise UsageError(f"{path} is not Python source ({e})") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if "\0" in text:
        raise UsageError(f"{path} is not Python source (it contains null bytes)")


def load_function(target):
    """The function ``FUNC`` of ``FILE:FUNC``; raises UsageError with a readable message."""
    path, sep, func = target.rpartition(":")
    if not sep or not path or not func:
        raise UsageError(f"expected FILE:FUNC (e.g. examples/mlp_cli.py:loss), got {target!r}")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory; give a Python file (FILE:FUNC)")
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    _check_source(path)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)       # let the file import its neighbours, as `python FILE` does
    try:
        namespace = runpy.run_path(path, run_name="__symgrad__")
    except SyntaxError as e:
        raise UsageError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    finally:
        if sys.path and sys.path[0] == folder:
            del sys.path[0]
    if func not in namespace:
        found = sorted(k for k, v in namespace.items()
                       if callable(v) and not k.startswith("_")
                       and getattr(v, "__module__", None) == "__symgrad__")
        hint = f" (functions there: {', '.join(found)})" if found else ""
        raise UsageError(f"{path} has no function {func!r}{hint}")
    f = namespace[func]
    if not callable(f):
        raise UsageError(f"{path}:{func} is not a function (got {type(f).__name__})")
    return f


def run(args):
    """The text to print for parsed ``args``."""
    import symgrad as sg

    f = load_function(args.target)
    shapes = {}
    for name, shape in args.shape:
        if name in shapes:
            raise UsageError(f"--shape given twice for {name}")
        shapes[name] = shape
    wrt = None
    if args.wrt:
        wrt = tuple(int(w) if w.isdigit() else w for w in args.wrt)
    dims = {}
    for d in args.dims or ():
        dims.update(d)
    if dims and not args.check:
        raise UsageError("--dims is only used with --check")
    if args.check:
        return str(sg.check(f, shapes=shapes, dims=dims, wrt=wrt))
    g = sg.grad_fn(f, wrt=wrt, shapes=shapes)
    if args.latex:
        return g.latex()
    if args.program:
        return g.program()
    if args.emit:
        return g.source(args.emit).rstrip("\n")
    return str(g)


def main(argv=None):
    """Entry point of ``symgrad`` and ``python -m symgrad``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        try:
            text = run(args)
        except CheckError as e:
            print(f"{parser.prog}: check failed: {e}", file=sys.stderr)
            return CHECK_FAILED_EXIT
        except (UsageError, SymgradError) as e:
            # one line; any other exception is a bug in the user's code: keep its traceback
            parser.error(" ".join(str(e).split()))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else USAGE_EXIT)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader stopped early (symgrad ... | head): not an error, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
