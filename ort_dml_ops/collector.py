"""Python's cyclic garbage collector paused around whole-model work (`convert`, `inspect`).

An onnx-ir graph, and the placement graph `inspect` builds, is a web of reference cycles
(node <-> value), so every full collection walks the whole model. Both steps allocate a few
objects per node and free almost none until they return, so the collector kept running while
the model grew: a third of a 10k-node `convert` (~1,800 collections while it grew to 50k nodes;
6.4 s -> 4.2 s) and a quarter of `inspect` on a 50k-node model (docs/performance.md). The
little cyclic garbage they make is collected once the collector runs again. A collector the
caller had switched off stays off.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused():
    """The cyclic collector off while the block (or the decorated function) runs; the
    caller's setting restored after, on every exit."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
