"""Repeated small products on the GPU as replayed CUDA graphs.

A small product is host-bound: at 512^2 its kernels take 0.09 ms of a 0.71 ms call
(bench/results/2026-12-04-a9b41de/kernels_matmul_512.txt), the rest is Python and
about twenty launches.  The finite pipeline (operand rows, plan, residues, the
fused kernel, the flags' reduction) launches the same kernels with the same sizes
whenever the shapes and options are the same: nothing in it depends on the data
on the host in fast and accurate mode.  So the second call of a shape captures it
once into a CUDA graph over buffers of its own, and later calls copy their inputs
in, launch the graph, and copy the result out: three launches and the one 4-byte
read of the IEEE flags that every call makes.  The kernels and their order are
the eager ones, so the bits are the same.

The buffers and every intermediate live in a memory pool of the graph's own, kept
while the graph is cached (CACHE_ENTRIES, least recently used dropped): an
intermediate freed during the capture goes back to that pool alone, never to
CuPy's, whose later allocations the replays would overwrite.  A lock per graph
covers a replay from the copy in to the flags' read, which waits for the graph:
threads share the cache, not the buffers.
"""

import collections
import os
import threading

import cupy

# Off with OZAKI_CUDA_GRAPHS=0 (or by setting this False).
ENABLED = os.environ.get("OZAKI_CUDA_GRAPHS", "1") != "0"
# A shape is captured on its CAPTURE_AFTER-th call: one eager call first compiles
# the kernels and fills the host-side caches (constants, tables), which a capture
# must not do.
CAPTURE_AFTER = 2
CACHE_ENTRIES = 16
# ... and at most this many bytes held in the cached graphs' pools (the least recently used
# dropped first, the newest kept): a graph keeps every intermediate of its product, about
# 1.2 GB for a stack of 16 x 1024^2 at 16 moduli (scheme.GRAPH_MAX_WORK).
CACHE_BYTES = 4 << 30

_lock = threading.Lock()
_graphs = collections.OrderedDict()      # key -> _Graph
_calls = collections.Counter()           # key -> eager calls so far
_refused = set()                         # keys whose capture failed: eager from then on


class _Graph:
    def __init__(self, finite, A, B):
        self.pool = cupy.cuda.MemoryPool()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.lock = threading.Lock()
        self.stream.wait_event(cupy.cuda.get_current_stream().record())    # A and B are ready
        with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
            self.A, self.B = cupy.empty(A.shape, A.dtype), cupy.empty(B.shape, B.dtype)
            self.A[...] = A
            self.B[...] = B
            # one eager run into the pool first: the capture then finds every block
            # it asks for there (no cudaMalloc while capturing)
            C, found = finite(self.A, self.B)
            del C, found
            self.stream.synchronize()
            self.stream.begin_capture(cupy.cuda.runtime.streamCaptureModeRelaxed)
            try:
                self.C, self.found = finite(self.A, self.B)
            finally:
                self.graph = self.stream.end_capture()
        self.nbytes = self.pool.total_bytes()

    def replay(self, A, B):
        with self.lock:
            self.A[...] = A
            self.B[...] = B
            self.graph.launch(cupy.cuda.get_current_stream())
            C = [c.copy() for c in self.C]
            return C, int(self.found)


def capturing():
    """Whether the current stream is being captured (by the caller's own graph)."""
    return cupy.cuda.get_current_stream().is_capturing()


def replayed(key, finite, A, B):
    """``finite(A, B)`` -> (parts, device flags), as (parts, host flags): eager on the
    first calls of ``key`` (and whenever graphs are off, or the caller is capturing),
    then by the graph captured for it.  ``key`` holds everything the launches depend
    on besides the data: shapes, dtypes, options, device."""
    if not ENABLED or capturing():
        C, found = finite(A, B)
        return C, int(found)
    key = key + (cupy.cuda.Device().id,)
    with _lock:
        graph = _graphs.get(key)
        if graph is not None:
            _graphs.move_to_end(key)
        else:
            # a call counts once it has run: the capture then finds the device tables the
            # kernels read (cupy_backend._pow2, ...) made by an eager call in CuPy's own
            # pool, not in the graph's, which is freed with the graph
            ready = _calls[key] > 0 and _calls[key] + 1 >= CAPTURE_AFTER and key not in _refused
    if graph is None and ready:
        try:
            graph = _Graph(finite, A, B)
        except Exception:               # noqa: BLE001  a step that cannot be captured (a library
            with _lock:                 # call CuPy refuses inside a capture): eager for this key
                _refused.add(key)
    if graph is None:
        C, found = finite(A, B)
        found = int(found)
        with _lock:
            _calls[key] += 1
        return C, found
    if key not in _graphs:
        with _lock:
            _graphs[key] = graph
            _calls.pop(key, None)
            while len(_graphs) > CACHE_ENTRIES or (
                    len(_graphs) > 1 and sum(g.nbytes for g in _graphs.values()) > CACHE_BYTES):
                _graphs.popitem(last=False)
    return graph.replay(A, B)


def clear():
    """Drop every cached graph (and with it its memory pool)."""
    with _lock:
        _graphs.clear()
        _calls.clear()
        _refused.clear()
