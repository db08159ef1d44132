"""symgrad's folder of derived files that may be rebuilt at any time: ``$SYMGRAD_CACHE``,
else ``~/.cache/symgrad``, else a folder in the system's temporary directory when there is
no home folder or it cannot be written. Its files are trusted as Python trusts
``__pycache__``: each user of a subfolder checks that an entry belongs to what it was made
from (a rule file's text, a kernel's source), not that nobody else edited it."""
import os
import tempfile


def cache_folder(name: str) -> str:
    """The subfolder ``name`` of the cache, created if missing."""
    home = os.path.expanduser("~")
    root = os.environ.get("SYMGRAD_CACHE") or (
        os.path.join(home, ".cache", "symgrad") if os.path.isabs(home) else None)
    if root is not None:
        path = os.path.join(root, name)
        try:
            os.makedirs(path, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            pass
    path = os.path.join(tempfile.gettempdir(), f"symgrad-{name}")
    os.makedirs(path, exist_ok=True)
    return path


def write_atomically(path: str, text: str) -> None:
    """``text`` as the file ``path``, which readers (other processes too) see whole or
    not at all: written beside it, then renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
