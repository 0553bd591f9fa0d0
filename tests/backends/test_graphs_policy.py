"""The CUDA-graph cache's policy (ozaki/backends/graphs.py) on the CPU, over a stand-in for
CuPy that records what would be launched: the first call of a shape runs eagerly, the
second captures once (an eager warm run, then the capture) and replays; later calls only
replay; a call that raises does not count; a shape whose capture fails stays eager; the
cache keeps CACHE_ENTRIES shapes, least recently used dropped; graphs off, or a caller
capturing its own graph, run eagerly.  Host reads (host.read) inside a captured call are
recorded by a first eager run, replayed to the capture with a device check each, and a
replay whose check fails runs again eagerly; a key whose recent replays miss often
(MISS_FRACTION) is dropped and stays eager.  A graph whose inputs repeat on two replays in
a row captures a direct graph over them, which later calls with them launch without the
copy in (DIRECT_CAPTURES such captures at most).  The GPU tests (test_graphs.py,
tests/fft/test_fft_graphs.py) check the bits."""

import importlib.util
import itertools
import os
import sys
import types

import numpy as np
import pytest

GRAPHS = os.path.join(os.path.dirname(__file__), "..", "..", "ozaki", "backends", "graphs.py")


class Recorder:
    def __init__(self):
        self.events = []
        self.capturing = False
        self.pool_bytes = 0             # what each graph's pool holds after its capture
        self.missed = 0                 # what a replay's device checks find
        self.in_capture = False
        self.streams = []               # (len(events) then, what a stream did): the graph's own
                                        # stream ("graph") or a caller's ("caller")


def fake_cupy(rec):
    class Stream:
        def __init__(self, non_blocking=False):
            self.name = "graph" if non_blocking else "caller"

        def wait_event(self, event):
            if event is not None:
                rec.streams.append((len(rec.events), f"{self.name} waits for {event}"))

        def record(self):
            return self.name            # the event: what its stream had done

        def __enter__(self):
            rec.streams.append((len(rec.events), f"on {self.name}"))
            return self

        def __exit__(self, *exc):
            return False

        def synchronize(self):
            rec.events.append("sync")

        def begin_capture(self, mode):
            rec.events.append("begin")
            rec.in_capture = True

        def end_capture(self):
            rec.events.append("end")
            rec.in_capture = False

            class Graph:
                def launch(self, stream):
                    rec.events.append("launch")
            return Graph()

        def is_capturing(self):
            return rec.capturing

    addresses = itertools.count(1 << 20, 4096)

    class Array:
        def __init__(self, shape=(2, 2), dtype="f8", value=0):
            self.shape, self.dtype, self.value = shape, np.dtype(dtype), value
            self.data = types.SimpleNamespace(ptr=next(addresses))     # a fresh allocation
            self.nbytes = int(np.prod(shape, dtype=int)) * self.dtype.itemsize
            self.strides = tuple(int(np.prod(shape[i + 1:], dtype=int)) * self.dtype.itemsize
                                 for i in range(len(shape)))

        def __setitem__(self, key, value):
            rec.events.append("copy in")

        def __getitem__(self, key):     # the missed flag's element, read after a replay
            rec.events.append("missed read")
            return rec.missed

        def copy(self):
            rec.events.append("copy out")
            return Array(self.shape, self.dtype, self.value)

        def get(self):
            rec.events.append("get")
            return np.full(self.shape, self.value, self.dtype)

        def fill(self, v):
            rec.events.append("clear missed")

    class CUDARuntimeError(RuntimeError):
        pass

    def Memory(size):                   # cudaMalloc, out of memory
        raise CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")

    def elementwise(*args, **kwargs):
        return lambda *a: rec.events.append("check")

    cuda = types.SimpleNamespace(
        Stream=Stream, get_current_stream=lambda: Stream(),
        MemoryPool=lambda allocator: types.SimpleNamespace(malloc=None, total_bytes=lambda: rec.pool_bytes,
                                                           allocator=allocator),
        Memory=Memory, MemoryPointer=lambda mem, offset: mem,
        using_allocator=lambda malloc: Stream(),
        runtime=types.SimpleNamespace(streamCaptureModeRelaxed=2, CUDARuntimeError=CUDARuntimeError),
        Device=lambda: types.SimpleNamespace(id=0))
    pool = types.SimpleNamespace(free_all_blocks=lambda stream=None: None)
    return types.SimpleNamespace(cuda=cuda, get_default_memory_pool=lambda: pool, empty=lambda shape, dtype: Array(shape, dtype), int32="i4",
                                 zeros=lambda shape, dtype: Array((shape,), dtype),
                                 asarray=lambda v: v, ElementwiseKernel=elementwise), Array


@pytest.fixture
def graphs(monkeypatch):
    rec = Recorder()
    cupy, Array = fake_cupy(rec)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    spec = importlib.util.spec_from_file_location("ozaki.backends.graphs_under_test", GRAPHS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, rec, Array


def finite_of(rec, Array, fail=False):
    def finite(A, B):
        rec.events.append("finite")
        if fail:
            raise MemoryError("out of memory")
        return [Array()], Array((), "i4")
    return finite


def test_eager_then_one_capture_then_replays(graphs):
    g, rec, Array = graphs
    finite = finite_of(rec, Array)
    seen = []
    for _ in range(4):
        rec.events.clear()
        C, found = g.replayed(("shape",), finite, Array(), Array())     # fresh operands: copied in
        assert found == 0 and len(C) == 1
        seen.append(list(rec.events))
    assert seen[0] == ["finite", "get"]
    # the recorded run, the warm run in the graph's pool, the capture; then the replay
    assert seen[1].count("begin") == 1 and seen[1].count("finite") == 3
    assert seen[1][-4:] == ["launch", "copy out", "copy out", "get"]
    assert seen[2] == seen[3] == ["copy in", "copy in", "launch", "copy out", "copy out", "get"]


def test_a_call_that_raises_does_not_count(graphs):
    g, rec, Array = graphs
    A = Array()
    with pytest.raises(MemoryError):
        g.replayed(("shape",), finite_of(rec, Array, fail=True), A, A)
    rec.events.clear()
    g.replayed(("shape",), finite_of(rec, Array), A, A)
    assert rec.events == ["finite", "get"]              # still the first call: eager, no capture


def test_a_failed_capture_stays_eager(graphs):
    """A capture that fails is tried again on later calls, CAPTURE_TRIES times in all."""
    g, rec, Array = graphs
    A = Array()

    def finite(a, b):
        if rec.in_capture:
            raise NotImplementedError("cuBLAS during capture")
        return [Array()], Array((), "i4")
    for _ in range(g.CAPTURE_TRIES + 3):
        g.replayed(("shape",), finite, A, A)
    assert "launch" not in rec.events and not g._graphs and ("shape", 0) in g._refused
    assert rec.events.count("begin") == g.CAPTURE_TRIES == g._failures[("shape", 0)]


def test_least_recently_used_dropped(graphs, monkeypatch):
    g, rec, Array = graphs
    monkeypatch.setattr(g, "CACHE_ENTRIES", 2)
    A = Array()
    finite = finite_of(rec, Array)
    for key in ("a", "b", "a", "c"):
        for _ in range(2):
            g.replayed((key,), finite, A, A)
    assert list(g._graphs) == [("a", 0), ("c", 0)]
    g.clear()
    assert not g._graphs and not g._calls


def test_bytes_held_bound_the_cache(graphs, monkeypatch):
    """Past CACHE_BYTES in the graphs' pools the least recently used go first; the newest
    stays even when it alone holds more."""
    g, rec, Array = graphs
    monkeypatch.setattr(g, "CACHE_BYTES", 250)
    finite = finite_of(rec, Array)
    for key, held in (("a", 100), ("b", 100), ("a", 100), ("c", 100)):
        rec.pool_bytes = held
        for _ in range(2):
            g.replayed((key,), finite, Array(), Array())    # fresh operands: none held
    assert list(g._graphs) == [("a", 0), ("c", 0)]
    rec.pool_bytes = 400
    for _ in range(2):
        g.replayed(("d",), finite, Array(), Array())
    assert list(g._graphs) == [("d", 0)]


def test_off_or_capturing_is_eager(graphs, monkeypatch):
    g, rec, Array = graphs
    A = Array()
    finite = finite_of(rec, Array)
    monkeypatch.setattr(g, "ENABLED", False)
    for _ in range(3):
        g.replayed(("shape",), finite, A, A)
    monkeypatch.setattr(g, "ENABLED", True)
    rec.capturing = True
    for _ in range(3):
        g.replayed(("shape",), finite, A, A)
    assert rec.events == ["finite", "get"] * 6 and not g._graphs and not g._calls


def reading(rec, Array, reads=1, bounds=None):
    """A call that reads ``reads`` device values on the host (host.read), 7 each."""
    from ozaki.backends import host

    def call(x):
        rec.events.append("call")
        got = [int(host.read(Array((), "i8", 7), bounds)) for _ in range(reads)]
        assert got == [7] * reads
        return (Array(),)
    return call


def test_speculation_records_once_then_checks_on_the_device(graphs):
    g, rec, Array = graphs
    seen = []
    for _ in range(4):
        rec.events.clear()
        assert len(g.speculated(("fft",), reading(rec, Array, 2), Array())) == 1
        seen.append(list(rec.events))
    assert seen[0] == ["call", "get", "get"]            # eager: plain reads
    capture = seen[1][seen[1].index("begin"):seen[1].index("end")]
    assert seen[1][:3] == ["call", "get", "get"]        # the recorded run reads; later runs don't
    assert capture == ["begin", "clear missed", "call", "check", "check"]
    assert seen[1].count("get") == 2
    assert seen[2] == seen[3] == ["copy in", "launch", "copy out", "missed read"]


def test_a_failed_check_runs_the_call_again_eagerly(graphs):
    g, rec, Array = graphs
    for _ in range(2):
        g.speculated(("fft",), reading(rec, Array), Array())
    rec.missed = 1
    rec.events.clear()
    g.speculated(("fft",), reading(rec, Array), Array())
    assert rec.events == ["copy in", "launch", "copy out", "missed read", "call", "get"]


def test_bounds_are_recorded(graphs):
    g, rec, Array = graphs
    got = []

    def bounds(v):
        got.append(int(v))
        return v - 3, v + 5
    for _ in range(3):
        g.speculated(("fft",), reading(rec, Array, bounds=bounds), Array())
    (graph,) = g._graphs.values()
    (value, lo, hi), = graph.speculation.recorded
    assert got == [7] and int(value) == 7 and int(lo) == 4 and int(hi) == 12


def test_other_reads_in_the_capture_stay_eager(graphs):
    g, rec, Array = graphs
    from ozaki.backends import host

    def call(x):                        # the recorded run reads once, the others twice
        speculation = host.active()
        return reading(rec, Array, 1 if speculation is not None and not speculation.replay else 2)(x)
    for _ in range(3):
        g.speculated(("fft",), call, Array())
    assert not g._graphs and "SpeculationError" in g._refused[("fft", 0)]


def test_a_replay_waits_for_the_last_ones_copies(graphs):
    """The graph's input buffers are rewritten only after the previous replay's outputs were
    copied out (an event recorded then, waited on by the next replay's stream)."""
    g, rec, Array = graphs
    waited = []
    g.cupy.cuda.Stream.wait_event = lambda self, event: waited.append(event)
    g.cupy.cuda.Stream.record = lambda self: "copied"
    for _ in range(4):
        g.speculated(("fft",), reading(rec, Array), Array())
    assert waited.count("copied") >= 2


def test_a_widened_value_is_what_every_run_decides_by(graphs):
    """host.read's ``widen``: the recorded run, the warm run and the capture all get the
    widened value (the plan a replay keeps), its bounds computed from it."""
    from ozaki.backends import host
    g, rec, Array = graphs
    seen = []

    def call(x):
        seen.append(int(host.read(Array((), "i8", 7), lambda v: (v - 20, v), lambda v: v + 8)))
        return (Array(),)
    for _ in range(3):
        g.speculated(("fft",), call, Array())
    (graph,) = g._graphs.values()
    (value, lo, hi), = graph.speculation.recorded
    assert seen == [7, 15, 15, 15] and int(value) == 15 and int(lo) == -5 and int(hi) == 15


def replays_missing(g, rec, Array, misses, key=("fft",)):
    """One call of ``key`` a pattern entry (the first two: eager, then the capture), each
    later replay's check failing where the entry is true; the events of the calls."""
    seen = []
    for missed in misses:
        rec.missed = int(missed)
        rec.events.clear()
        g.speculated(key, reading(rec, Array), Array())
        seen.append(list(rec.events))
    return seen


def test_a_key_whose_replays_miss_goes_eager(graphs):
    """Every replay missing: after MISS_AFTER of them the graph is dropped and the key runs
    eagerly from then on, never captured or replayed again."""
    g, rec, Array = graphs
    calls = 1 + g.MISS_AFTER + 20
    seen = replays_missing(g, rec, Array, [True] * calls)
    assert g.stats["captured"] == 1 and g.stats["missed"] == g.MISS_AFTER and not g.stats["replayed"]
    assert g.stats["eager_misses"] == 1 and not g._graphs and "replays missed" in g._refused[("fft", 0)]
    assert sum(events.count("launch") for events in seen) == g.MISS_AFTER
    assert sum(events.count("begin") for events in seen) == 1
    assert seen[g.MISS_AFTER][-2:] == ["call", "get"]           # the last replay, then its eager run
    assert all(events == ["call", "get"] for events in seen[1 + g.MISS_AFTER:])   # eager: plain reads


def test_a_key_missing_rarely_keeps_replaying(graphs):
    """One replay in five missing (below MISS_FRACTION), through several windows: replayed
    every call."""
    g, rec, Array = graphs
    replays = 5 * g.MISS_WINDOW
    misses = [False] + [r % 5 == 4 for r in range(replays)]
    seen = replays_missing(g, rec, Array, misses)
    assert g.stats["missed"] == replays // 5 and g.stats["replayed"] == replays - replays // 5
    assert not g.stats["eager_misses"] and list(g._graphs) == [("fft", 0)]
    assert all(events.count("launch") == 1 for events in seen[1:])


def test_old_replays_fade(graphs):
    """The counts are over the last replays: a key that hit MISS_WINDOW times has (32, 0)
    after the halving, so misses from then on drop it after 11 (11 of 43 >= 0.25), where the
    whole history (64 hits) would take 22."""
    g, rec, Array = graphs
    assert (g.MISS_WINDOW, g.MISS_FRACTION) == (64, 0.25)      # the counts below are for these
    seen = replays_missing(g, rec, Array, [False] * (1 + g.MISS_WINDOW) + [True] * 30)
    assert g.stats["replayed"] == g.MISS_WINDOW and g.stats["missed"] == 11
    assert g.stats["eager_misses"] == 1 and not g._graphs and g._replays[("fft", 0)] == (43, 11)
    assert sum(events.count("launch") for events in seen) == g.MISS_WINDOW + 11


def test_clear_forgets_the_misses(graphs):
    """A key left eager by its misses is captured and replayed again after clear(); and one
    evicted from the cache starts its counts afresh."""
    g, rec, Array = graphs
    replays_missing(g, rec, Array, [True] * (1 + g.MISS_AFTER))
    assert g.stats["eager_misses"] == 1 and not g._graphs
    g.clear()
    assert not g._replays and not g.stats
    seen = replays_missing(g, rec, Array, [False] * 4)
    assert g.stats["captured"] == 1 and g.stats["replayed"] == 3 and list(g._graphs) == [("fft", 0)]
    assert [events.count("launch") for events in seen] == [0, 1, 1, 1]


def test_an_evicted_key_starts_its_misses_afresh(graphs, monkeypatch):
    g, rec, Array = graphs
    monkeypatch.setattr(g, "CACHE_ENTRIES", 1)
    replays_missing(g, rec, Array, [True] * g.MISS_AFTER)        # one short of the verdict
    assert g._replays[("fft", 0)] == (g.MISS_AFTER - 1, g.MISS_AFTER - 1)
    replays_missing(g, rec, Array, [False] * 2, key=("other",))  # evicts ("fft", 0)
    assert list(g._graphs) == [("other", 0)] and ("fft", 0) not in g._replays
    replays_missing(g, rec, Array, [True] * 3)                   # eager, captured again: 2 replays
    assert g._replays[("fft", 0)] == (2, 2) and list(g._graphs) == [("fft", 0)]
    assert not g.stats["eager_misses"]


def calls(g, rec, finite, operands, key=("shape",)):
    """``g.replayed(key, finite, A, B)`` for each (A, B) of ``operands``: each call's events
    and parts."""
    seen, parts = [], []
    for A, B in operands:
        rec.events.clear()
        C, _ = g.replayed(key, finite, A, B)
        seen.append(list(rec.events))
        parts.append(C)
    return seen, parts


REPLAY = ["copy in", "copy in", "launch", "copy out", "copy out", "get"]
DIRECT_REPLAY = ["launch", "copy out", "copy out", "get"]


def test_the_same_arrays_again_replay_without_the_copy_in(graphs):
    """Two replays in a row over the same arrays: the next captures a direct graph over them
    (a run in CuPy's pool, a warm run in the graph's and the capture, no copy in), which it
    and later calls launch as they are."""
    g, rec, Array = graphs
    A, B = Array(), Array((2, 3))
    seen, _ = calls(g, rec, finite_of(rec, Array), [(A, B)] * 6)
    assert seen[1][-6:] == REPLAY                                # the capture's call: copied in
    assert seen[2].count("begin") == 1 and seen[2].count("finite") == 3 and "copy in" not in seen[2]
    assert seen[2][-4:] == DIRECT_REPLAY
    assert seen[3:] == [DIRECT_REPLAY] * 3
    assert g.stats["direct_captured"] == 1 and g.stats["direct"] == 4 and g.stats["replayed"] == 5
    (graph,) = g._graphs.values()
    assert graph.direct.inputs == (A, B)                         # held: their memory stays theirs


def test_a_direct_capture_runs_on_the_graphs_stream_between_the_callers_waits(graphs):
    """The direct capture's runs go on the graph's own stream after it waited for the caller's
    (the inputs written, the last replay's copies out), and the caller's stream waits for them
    before it launches the direct graph."""
    g, rec, Array = graphs
    A, B = Array(), Array()
    calls(g, rec, finite_of(rec, Array), [(A, B)] * 2)
    rec.events.clear()
    rec.streams.clear()
    calls(g, rec, finite_of(rec, Array), [(A, B)])
    events, streams = rec.events, rec.streams
    first, end, launch = events.index("finite"), events.index("end"), events.index("launch")
    assert events.count("begin") == 1 and "copy in" not in events
    waited = [at for at, what in streams if what == "graph waits for caller"]
    entered = [at for at, what in streams if what == "on graph"]
    resumed = [at for at, what in streams if what == "caller waits for graph"]
    assert waited and waited[0] <= first and entered and entered[0] <= first
    assert resumed and end < resumed[-1] <= launch


def test_fresh_arrays_are_always_copied_in(graphs):
    g, rec, Array = graphs
    seen, _ = calls(g, rec, finite_of(rec, Array), [(Array(), Array()) for _ in range(8)])
    assert seen[2:] == [REPLAY] * 6
    assert not g.stats["direct_captured"] and not g.stats["direct"]
    (graph,) = g._graphs.values()
    assert graph.direct is None


def test_direct_captures_are_bounded(graphs):
    """Two sets of operands taking turns in pairs: each pair captures a direct graph for
    its set, replacing the other's, DIRECT_CAPTURES times; then only the last one's set
    replays directly.  Taking turns call by call captures none."""
    g, rec, Array = graphs
    X, Y = (Array(), Array()), (Array(), Array())
    seen, _ = calls(g, rec, finite_of(rec, Array), [X, X, Y, Y] * 6)
    assert g.DIRECT_CAPTURES == 4 and g.stats["direct_captured"] == g.DIRECT_CAPTURES
    assert sum(events.count("begin") for events in seen) == 1 + g.DIRECT_CAPTURES
    (graph,) = g._graphs.values()
    assert graph.direct.inputs == X     # the pairs after the first captured for Y, X, Y, X
    assert seen[-4:] == [DIRECT_REPLAY] * 2 + [REPLAY] * 2
    g.clear()
    seen, _ = calls(g, rec, finite_of(rec, Array), [X, Y] * 6)
    assert not g.stats["direct_captured"] and seen[2:] == [REPLAY] * 10


def test_a_failed_direct_capture_replays_the_copy_in_graph(graphs):
    """A direct capture that raises: the call replays the copy-in graph (its outputs), and
    the graph never tries a direct capture again."""
    g, rec, Array = graphs
    made = itertools.count()
    rec.fail = False

    def finite(a, b):
        if rec.fail and rec.in_capture:
            raise RuntimeError("not capturable over these")
        return [Array(value=next(made))], Array((), "i4")
    A, B = Array(), Array()
    calls(g, rec, finite, [(A, B)] * 2)
    (graph,) = g._graphs.values()
    rec.fail = True
    seen, parts = calls(g, rec, finite, [(A, B)])
    assert seen[0].count("begin") == 1 and seen[0][-6:] == REPLAY
    assert parts[0][0].value == graph.outputs[0].value
    assert "RuntimeError" in graph.direct_failed and g.stats["direct_failed"] == 1
    rec.fail = False
    seen, parts = calls(g, rec, finite, [(A, B)] * 3)
    assert seen == [REPLAY] * 3 and all(C[0].value == graph.outputs[0].value for C in parts)
    assert not g.stats["direct_captured"] and not g.stats["direct"] and graph.direct is None


def test_direct_graphs_off(graphs, monkeypatch):
    g, rec, Array = graphs
    monkeypatch.setattr(g, "DIRECT", False)
    A, B = Array(), Array()
    seen, _ = calls(g, rec, finite_of(rec, Array), [(A, B)] * 6)
    assert seen[2:] == [REPLAY] * 4 and not g.stats["direct_captured"] and not g.stats["direct"]


def test_a_direct_graph_counts_its_pool_and_held_arrays(graphs):
    """The direct capture's growth of the pool and the caller's arrays it holds count in the
    graph's bytes (CACHE_BYTES)."""
    g, rec, Array = graphs
    A, B = Array((4, 8)), Array((8, 16))
    rec.pool_bytes = 1000
    calls(g, rec, finite_of(rec, Array), [(A, B)] * 2)
    (graph,) = g._graphs.values()
    assert graph.nbytes == 1000 and graph.direct is None
    rec.pool_bytes = 1200                                       # the direct graph's outputs
    calls(g, rec, finite_of(rec, Array), [(A, B)])
    assert graph.direct is not None and graph.nbytes == 1200 + 32 * 8 + 128 * 8


def test_a_failed_check_after_a_direct_replay_runs_the_call_again_eagerly(graphs):
    g, rec, Array = graphs
    x = Array()
    for _ in range(3):                  # eager, the capture, the direct capture
        g.speculated(("fft",), reading(rec, Array), x)
    assert g.stats["direct_captured"] == 1
    rec.missed = 1
    rec.events.clear()
    g.speculated(("fft",), reading(rec, Array), x)
    assert rec.events == ["launch", "copy out", "missed read", "call", "get"]
    assert g.stats["direct"] == 2 and g.stats["missed"] == 1 and g.stats["replayed"] == 2


def test_a_captured_graphs_pool_keeps_its_free_blocks(graphs):
    """A cudaMalloc failing in a graph's pool once the graph is captured raises MemoryError,
    not the CUDARuntimeError on which CuPy's pool would release its free blocks (the captured
    kernels' intermediates) before the direct capture's fallback replays over them."""
    g, rec, Array = graphs
    calls(g, rec, finite_of(rec, Array), [(Array(), Array())] * 2)
    (graph,) = g._graphs.values()
    with pytest.raises(MemoryError):
        graph.pool.allocator(1 << 20)
    with pytest.raises(g.cupy.cuda.runtime.CUDARuntimeError):     # before: CuPy's own retry
        g._pool_malloc([False])(1 << 20)


def test_held_bytes_count_each_allocation_once(graphs):
    """A direct graph holding views keeps their whole allocations: each counted once, at its
    size; arrays without an allocation record count their own bytes."""
    g, rec, Array = graphs
    mem = types.SimpleNamespace(size=1 << 20)
    view = lambda ptr: types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr, mem=mem), nbytes=64)
    other = types.SimpleNamespace(data=types.SimpleNamespace(ptr=7, mem=types.SimpleNamespace(size=4096)), nbytes=8)
    assert g._held_bytes([view(0), view(64), other]) == (1 << 20) + 4096
    A = Array((4, 4))
    assert g._held_bytes([A, A]) == A.nbytes                     # one array twice: once
