"""The source of generated functions for tracebacks: kept in ``linecache`` under their
``<symgrad-...>`` file names, the most recent ``MAX_SOURCES`` only, so a process that
compiles many functions does not keep every source."""
import collections
import linecache
import threading

MAX_SOURCES = 256
_names: collections.deque[str] = collections.deque()
_lock = threading.Lock()


def remember(filename, text):
    """Show ``text`` in tracebacks through ``filename``; the oldest source goes."""
    with _lock:
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        _names.append(filename)
        while len(_names) > MAX_SOURCES:
            linecache.cache.pop(_names.popleft(), None)
