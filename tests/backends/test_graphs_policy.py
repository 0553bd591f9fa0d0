"""The CUDA-graph cache's policy (ozaki/backends/graphs.py) on the CPU, over a stand-in for
CuPy that records what would be launched: the first call of a shape runs eagerly, the
second captures once (an eager warm run, then the capture) and replays; later calls only
replay; a call that raises does not count; a shape whose capture fails stays eager; the
cache keeps CACHE_ENTRIES shapes, least recently used dropped; graphs off, or a caller
capturing its own graph, run eagerly.  Host reads (host.read) inside a captured call are
recorded by a first eager run, replayed to the capture with a device check each, and a
replay whose check fails runs again eagerly; a key whose recent replays miss often
(MISS_FRACTION) is dropped and stays eager.  The GPU tests (test_graphs.py,
tests/fft/test_fft_graphs.py) check the bits."""

import importlib.util
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


def fake_cupy(rec):
    class Stream:
        def __init__(self, non_blocking=False):
            pass

        def wait_event(self, event):
            pass

        def record(self):
            return None

        def __enter__(self):
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

    class Array:
        def __init__(self, shape=(2, 2), dtype="f8", value=0):
            self.shape, self.dtype, self.value = shape, np.dtype(dtype), value

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

    def elementwise(*args, **kwargs):
        return lambda *a: rec.events.append("check")

    cuda = types.SimpleNamespace(
        Stream=Stream, get_current_stream=lambda: Stream(),
        MemoryPool=lambda: types.SimpleNamespace(malloc=None, total_bytes=lambda: rec.pool_bytes),
        using_allocator=lambda malloc: Stream(), runtime=types.SimpleNamespace(streamCaptureModeRelaxed=2),
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
    A = Array()
    finite = finite_of(rec, Array)
    seen = []
    for _ in range(4):
        rec.events.clear()
        C, found = g.replayed(("shape",), finite, A, A)
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
    A = Array()
    finite = finite_of(rec, Array)
    for key, held in (("a", 100), ("b", 100), ("a", 100), ("c", 100)):
        rec.pool_bytes = held
        for _ in range(2):
            g.replayed((key,), finite, A, A)
    assert list(g._graphs) == [("a", 0), ("c", 0)]
    rec.pool_bytes = 400
    for _ in range(2):
        g.replayed(("d",), finite, A, A)
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
    x = Array()
    seen = []
    for _ in range(4):
        rec.events.clear()
        assert len(g.speculated(("fft",), reading(rec, Array, 2), x)) == 1
        seen.append(list(rec.events))
    assert seen[0] == ["call", "get", "get"]            # eager: plain reads
    capture = seen[1][seen[1].index("begin"):seen[1].index("end")]
    assert seen[1][:3] == ["call", "get", "get"]        # the recorded run reads; later runs don't
    assert capture == ["begin", "clear missed", "call", "check", "check"]
    assert seen[1].count("get") == 2
    assert seen[2] == seen[3] == ["copy in", "launch", "copy out", "missed read"]


def test_a_failed_check_runs_the_call_again_eagerly(graphs):
    g, rec, Array = graphs
    x = Array()
    for _ in range(2):
        g.speculated(("fft",), reading(rec, Array), x)
    rec.missed = 1
    rec.events.clear()
    g.speculated(("fft",), reading(rec, Array), x)
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
