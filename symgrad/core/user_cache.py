"""symgrad's folder of derived files that may be rebuilt at any time: ``$SYMGRAD_CACHE``,
else ``~/.cache/symgrad``, else a folder in the system's temporary directory when the
home folder cannot be written. Nothing in it is code symgrad runs without checking:
each user of a subfolder validates what it reads and rebuilds on any doubt."""
import os
import tempfile


def cache_folder(name: str) -> str:
    """The subfolder ``name`` of the cache, created if missing."""
    root = os.environ.get("SYMGRAD_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "symgrad")
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
