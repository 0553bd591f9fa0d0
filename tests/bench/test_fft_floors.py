"""bench.fft_floors: the counted bytes, operations and floors, checked by hand."""

import json

import pytest

from bench import fft_floors


def test_bytes_and_operations_a_point():
    b = fft_floors.pass_bytes(25, transposed=False)
    # residues 16 in + 75 out; GEMMs 75 in + 75 out; epilogue 75 in + 16 out; scans 48; copy 32
    assert b == {"residues": 91, "gemm": 150, "epilogue": 91, "scans": 48, "copies": 32}
    assert fft_floors.pass_bytes(16, transposed=True)["transposes"] == 32
    assert fft_floors.int8_ops(25, 1024) == 2 * 1024 * 3 * 25


def test_axes_of_a_cube_and_a_batch():
    assert fft_floors.axes((4, 8, 16)) == [(512, 4, True), (512, 8, True), (512, 16, False)]
    assert fft_floors._batch_passes((4096, 1024)) == [(4096 * 1024, 1024, False)]


def test_each_kernel_at_the_slower_of_its_roofs():
    card = fft_floors.CARDS["h100"]
    points = 1 << 20
    one = fft_floors.floors([(points, 1024, False)], 25, "h100")
    quarter = fft_floors.floors([(points, 1024, False)], 25, "h100", quarter=True)
    # one product: the GEMMs' int8 work binds (153,600 operations against 150 bytes a point)
    assert one["gemm"] == pytest.approx(points * 153600 / card["int8"])
    # a quarter of it: the bytes bind instead
    assert quarter["gemm"] == pytest.approx(max(points * 150 / card["copy"], points * 38400 / card["int8"]))
    assert one["epilogue"] == pytest.approx(points * 1864 / card["issue"])
    assert quarter["epilogue"] == pytest.approx(points * 1960 / card["issue"])
    assert one["residues"] == pytest.approx(points * 91 / card["copy"]) == quarter["residues"]
    fused = fft_floors.fused_floor([(points, 1024, False)], 25, "h100")
    assert fused == pytest.approx(points * max(80 / card["copy"], 38400 / card["int8"], 1960 / card["issue"]))
    assert fused < sum(quarter.values()) < sum(one.values())


def test_measured_rows_by_card(tmp_path):
    path = tmp_path / "fft.json"
    path.write_text(json.dumps({"meta": {"device": "NVIDIA H100 80GB HBM3"}, "rows": [
        {"shape": [512, 512, 512], "ozaki_ms": 100.0},
        {"shape": [512, 512, 512], "kind": "rfftn", "ozaki_ms": 60.0},
        {"shape": [4096, 1024], "kind": "batch of fft", "ozaki_ms": 2.0},
        {"shape": [65536], "ozaki_ms": 3.0}]}))
    assert fft_floors.measured_rows(path) == ("h100", {"fftn 512^3": 100.0, "batch 4096x1024": 2.0})


def test_table_prints(capsys):
    fft_floors.main(["--card", "h200"])
    out = capsys.readouterr().out
    assert "fftn 1024^3" in out and "batch 4096x1024" in out and "h200" in out
