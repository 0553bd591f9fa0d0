"""bench.crossover's case filter (CPU): --max-work keeps a short device call to the small
stacks, in the table and in the tile sweep."""

from bench import crossover


def test_max_work_keeps_the_small_stacks():
    a = crossover.parser().parse_args(["--sweep", "--max-work", "2.2e9"])
    assert a.sweep and a.max_work == 2.2e9
    assert [c[:5] for c in crossover.select(crossover.SWEEP_CASES, max_work=a.max_work)] == [
        ("stack", 4096, 64, 64, 64), ("stack", 1024, 128, 128, 128)]
    assert [c for c in crossover.select(crossover.CASES, max_work=a.max_work)] == [
        ("stack", 4096, 64, 64, 64, False), ("stack", 1024, 128, 128, 128, False),
        ("square", 1, 512, 512, 512, False), ("square", 1, 1024, 1024, 1024, False),
        ("complex", 1, 1024, 1024, 1024, True), ("complex-stack", 256, 64, 64, 64, True)]
    assert [c[:5] for c in crossover.select(crossover.CASES, ["stack"], a.max_work)] == [
        ("stack", 4096, 64, 64, 64), ("stack", 1024, 128, 128, 128)]


def test_without_max_work_every_case_of_the_labels():
    a = crossover.parser().parse_args(["--cases", "stack", "square"])
    assert a.max_work is None
    cases = crossover.select(crossover.CASES, a.cases, a.max_work)
    assert cases == [c for c in crossover.CASES if c[0] in ("stack", "square")] and len(cases) == 11
    assert crossover.select(crossover.CASES) == crossover.CASES


def test_sweep_tiles_include_warp_tiles_of_32():
    tiles = crossover.SWEEP_TILES
    assert len(set(tiles)) == len(tiles)
    assert {(32, 32, 1, 1, 64, 4), (64, 32, 2, 1, 64, 4)} <= set(tiles)
    for bm, bn, wm, wn, bk, stages in tiles:          # what fused.cu's m16n8k32 warp tiles need
        assert bm % (16 * wm) == 0 and bn % (8 * wn) == 0 and bk % 32 == 0
