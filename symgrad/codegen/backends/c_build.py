"""Building C source into an in-process module: cffi in API mode, the system compiler, and a
disk cache keyed by a hash of the source and the compiler flags.

cffi writes the extension's C file (``FFI.emit_c_code``); the compiler is called directly
(no setuptools: a module of a few small functions then builds in a fraction of a second).
A build happens in a private temporary directory and the finished module is moved into
the cache with one ``os.replace``, so parallel processes building the same source never
see half a file. The cache is ``$SYMGRAD_CACHE/c`` or ``~/.cache/symgrad/c``; a module
already there is loaded without compiling.
"""
import contextlib
import io
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading

from ...core.optional import MissingDependencyError
from ...core.user_cache import cache_folder
from ...errors import SymgradError

FLAGS = ("-fPIC", "-shared", "-std=gnu99", "-fno-math-errno", "-w") + (
    ("-undefined", "dynamic_lookup") if sys.platform == "darwin" else ())  # Python's symbols
# Optimising one straight-line function costs the compiler more than linear time: a
# gradient of 9000 statements (chain K=1000) in one function takes ~5 s of CPU at -O2 and
# 0.3 s at -O0. So a long scalar kernel is split into functions of at most CHUNK statements
# (``c._chunked_kernel_c``), which the compiler handles in time linear in the program; a
# source of more than LARGE statements is built at -O1 (about half -O2's compile time, and
# it keeps values in registers, which -O0 does not: chain K=1000 runs ~1.3x faster), and
# one whose longest function still has more than LARGE statements (a long array loop)
# at -O0.
CHUNK = 1500
LARGE = 3000
INSTALL = ("install a C compiler (Debian/Ubuntu: apt-get install gcc python3-dev; macOS: "
           "xcode-select --install) and cffi (pip install 'symgrad[c]'), or compile for "
           "\"numpy\" instead")


class CompilerError(MissingDependencyError):
    """compile("c") needs cffi and a working C compiler; this says which is missing."""


class CBuildError(SymgradError):
    """The generated C failed to compile: a bug in symgrad, reported with the compiler's
    message."""


_modules = {}
_lock = threading.Lock()


def cache_dir():
    return cache_folder("c")


def _sysconfig():
    """sysconfig, imported on first use (import symgrad does not pay for the C backend)."""
    import sysconfig
    return sysconfig


def _cffi():
    try:
        import cffi
    except ImportError as e:
        raise CompilerError('compile("c") needs cffi, which is not installed here; '
                            + INSTALL) from e
    return cffi


def compiler():
    """The compiler command (a list): $CC, Python's own, or cc/gcc/clang on the PATH."""
    for candidate in (os.environ.get("CC"), _sysconfig().get_config_var("CC"), "cc", "gcc",
                      "clang"):
        if not candidate:
            continue
        parts = candidate.split()
        if shutil.which(parts[0]):
            return parts
    raise CompilerError('compile("c") needs a C compiler and found none (looked for $CC, '
                        f"{_sysconfig().get_config_var('CC')!r}, cc, gcc, clang); " + INSTALL)


def _include_dirs():
    paths = _sysconfig().get_paths()
    return [d for d in {paths["include"], paths["platinclude"]} if d]


def load(cdef, source, statements=0, longest=0):
    """The ``lib`` and ``ffi`` of a module declaring ``cdef`` and defining ``source`` (of
    ``statements`` statements, its longest function of ``longest``: they choose the
    optimisation level)."""
    import hashlib
    cffi = _cffi()
    cc = compiler()
    level = "-O0" if longest > LARGE else "-O1" if statements > LARGE else "-O2"
    flags = (level,) + FLAGS
    suffix = _sysconfig().get_config_var("EXT_SUFFIX") or ""
    key = hashlib.sha256("\0".join((cdef, source, " ".join(cc), " ".join(flags),
                                     cffi.__version__, suffix)).encode()).hexdigest()[:24]
    name = f"_symgrad_c_{key}"
    with _lock:
        module = _modules.get(name)
        if module is None:
            module = _modules[name] = _load_or_build(cffi, cc, flags, name, cdef, source)
    return module.lib, module.ffi


def _load_or_build(cffi, cc, flags, name, cdef, source):
    directory = cache_dir()
    suffix = _sysconfig().get_config_var("EXT_SUFFIX") or ".so"
    path = os.path.join(directory, name + suffix)
    if not os.path.exists(path):
        os.makedirs(directory, exist_ok=True)
        _build(cffi, cc, flags, name, cdef, source, directory, path, suffix)
        return _load(name, path)
    try:
        return _load(name, path)
    except (ImportError, OSError):   # a damaged cached module (a full disk): build again
        _build(cffi, cc, flags, name, cdef, source, directory, path, suffix)
        return _load(name, path)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(
        name, path, loader=importlib.machinery.ExtensionFileLoader(name, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(cffi, cc, flags, name, cdef, source, directory, path, suffix):
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source(name, source)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        c_file = os.path.join(tmp, name + ".c")
        with contextlib.redirect_stdout(io.StringIO()):   # cffi says "generating <file>"
            ffi.emit_c_code(c_file)
        out = os.path.join(tmp, name + suffix)
        command = cc + list(flags) + [f"-I{d}" for d in _include_dirs()] + [
            c_file, "-o", out, "-lm"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as e:
            raise CompilerError(f'compile("c") could not run the C compiler {cc[0]!r} '
                                f"({e}); " + INSTALL) from e
        if done.returncode != 0:
            if "Python.h" in done.stderr:
                raise CompilerError('compile("c") needs the Python development headers '
                                    "(Python.h), which are missing; " + INSTALL)
            raise CBuildError("the C code symgrad generated did not compile (a bug in "
                              "symgrad; please report it). The compiler said:\n"
                              + done.stderr[-4000:])
        os.replace(out, path)
