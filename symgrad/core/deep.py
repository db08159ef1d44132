"""Running SymPy on expressions as deep as a traced graph.

symgrad's own walks over a graph are iterative, but SymPy's are recursive: building
``sin(e)`` asks ``e.is_zero``, which asks its arguments, and so on down the expression,
so a closed form of a 300-step chain already exceeds Python's default recursion limit.
``deep(fn, depth)`` runs ``fn`` directly for shallow expressions and, for deep ones, in a
worker thread whose stack and recursion limit fit the depth. The recursion limit is
process-wide: it is raised while deep calls run and restored after the last one.
"""
import sys
import threading

SHALLOW = 120              # graph depth below which SymPy fits the default limits
FRAMES_PER_LEVEL = 12      # Python frames SymPy may use per level of an expression
STACK_PER_FRAME = 512      # bytes of C stack per frame, generously
MAX_STACK = 1 << 30        # 1 GiB of (virtual) stack at most

_lock = threading.Lock()
_active = [0, None]        # deep calls running, the recursion limit before the first


def deep(fn, levels):
    """``fn()``, with room for SymPy to recurse through ``levels`` levels."""
    if levels < SHALLOW:
        return fn()
    frames = FRAMES_PER_LEVEL * levels + 1000
    stack = min(MAX_STACK, max(1 << 24, frames * STACK_PER_FRAME * 4))
    result = {}

    def run():
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            result["error"] = e

    with _lock:
        if _active[0] == 0:
            _active[1] = sys.getrecursionlimit()
        _active[0] += 1
        sys.setrecursionlimit(max(sys.getrecursionlimit(), frames))
        previous = threading.stack_size()
        threading.stack_size(stack)
        try:
            worker = threading.Thread(target=run, name="symgrad-deep")
            worker.start()
        finally:
            threading.stack_size(previous)
    try:
        worker.join()
    finally:
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                sys.setrecursionlimit(_active[1])
    if "error" in result:
        raise result["error"]
    return result["value"]
