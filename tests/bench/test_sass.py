"""bench.sass: the SASS counts on canned cuobjdump text (always), and on a real build where
nvcc, cuobjdump and nvdisasm are at hand (the lead EPILOGUE_BLOCKS changes)."""

import pytest

from bench import sass

CANNED = """
        Function : epilogue
        /*0000*/                   LDG.E.S8.CONSTANT R2, desc[UR8][R4.64] ;        /* 0x0000000804027981 */
        /*0010*/                   LDG.E.S8.CONSTANT R3, desc[UR8][R6.64] ;        /* 0x0000000806037981 */
        /*0020*/                   IADD3 R4, P0, R4, UR10, RZ ;                    /* 0x0000000a04047c10 */
        /*0030*/                   LDG.E.64.CONSTANT R8, desc[UR8][R10.64] ;       /* 0x000000080a087981 */
        /*0040*/               @P0 IMAD.IADD R5, R3, 0x1, -R7 ;                    /* 0x0000000103057824 */
        /*0050*/                   I2F.F64 R12, R2 ;                               /* 0x0000000200007312 */
        /*0060*/                   LDG.E.S8.CONSTANT R20, desc[UR8][R4.64] ;       /* 0x0000000804147981 */
        /*0070*/                   LDG.E.S8.CONSTANT R20, desc[UR8][R6.64] ;       /* 0x0000000806147981 */
        /*0080*/                   IMAD.WIDE R14, R20, 0x4, R16 ;                  /* 0x0000000414147825 */
        /*0090*/                   EXIT ;                                          /* 0x000000000000794d */
"""


def test_counts_of_canned_sass():
    s = sass.summary(CANNED)
    assert s["instructions"] == 10
    assert s["opcodes"] == {"LDG": 5, "IADD3": 1, "IMAD": 1, "I2F": 1, "IMAD.WIDE": 1, "EXIT": 1}
    # R2: read 5 on; R3: 3 on (a predicated read); the 64-bit load left out; R20 loaded twice:
    # the second load writes it (not a read), so the first's use is 2 on, the second's 1
    assert sass.load_leads(sass.instructions(CANNED)) == [5, 3, 2, 1]
    assert (s["loads"], s["lead_mean"], s["lead_median"]) == (4, 2.75, 2.5)


def test_resources_of_a_report():
    report = ("ptxas info    : Used 116 registers, used 1 barriers, 384 bytes cmem[0]\n"
              "ptxas info    : Function properties for epilogue\n"
              "    124 bytes stack frame, 124 bytes spill stores, 136 bytes spill loads\n")
    assert sass.resources(report) == (116, (124, 136))
    assert sass.resources("ptxas info    : Used 64 registers, 384 bytes cmem[0]\n") == (64, (0, 0))


def test_source_carries_defines_and_tables():
    text = sass.source("epilogue.cu", 16, True, [("PROD_T", "signed char"), ("SINGLE_PAIR", "1")])
    assert "#define NMOD 16\n" in text and "#define LP 5\n" in text and "#define LACC 5\n" in text
    assert "CRT_C[16][5]" in text and "#define PROD_T signed char\n" in text
    assert text.rstrip().endswith("}")            # the kernel file itself, last


@pytest.mark.skipif(None in (sass.tool("nvcc"), sass.tool("cuobjdump"), sass.tool("nvdisasm")),
                    reason="needs nvcc, cuobjdump and nvdisasm")
def test_launch_bounds_move_the_loads_ahead():
    """ptxas 13.0: the interleaved complex epilogue at 25 moduli issues its byte loads about 16
    instructions ahead of their use; with EPILOGUE_BLOCKS 4 (128 registers, __ldg loads) every
    modulus' loads come before the arithmetic (over 200)."""
    base = [("PROD_T", "signed char"), ("SINGLE_PAIR", 1), ("COMPLEX", 1), ("STACKED", 1), ("INTERLEAVED", 4)]
    default = sass.summary(sass.build(sass.source("epilogue.cu", 25, True, base))[1])
    bounded = sass.summary(sass.build(sass.source("epilogue.cu", 25, True, base + [("EPILOGUE_BLOCKS", 4)]))[1])
    assert default["loads"] == bounded["loads"] == 75
    assert default["lead_mean"] < 50 and bounded["lead_mean"] > 200


# The builds cupy_backend.epilogue gives EPILOGUE_BLOCKS 4 (one slice pair of int8 residues):
# each VEC its table picks (real 4 to 22 moduli, 2 to 32; complex 2 to 16, then 1), the widest
# of each, residuals, the interleaved FFT build at 25 moduli, and 49 moduli.
ONE_PAIR = [(14, [("VEC", 4)]), (22, [("VEC", 4)]), (32, [("VEC", 2)]), (49, []),
            (16, [("COMPLEX", 1), ("VEC", 2)]), (25, [("COMPLEX", 1), ("RESIDUAL", 1)]),
            (25, [("COMPLEX", 1), ("STACKED", 1), ("INTERLEAVED", 4)]), (49, [("COMPLEX", 1)]),
            (49, [("COMPLEX", 1), ("RESIDUAL", 1)])]


@pytest.mark.skipif(None in (sass.tool("nvcc"), sass.tool("cuobjdump"), sass.tool("nvdisasm")),
                    reason="needs nvcc, cuobjdump and nvdisasm")
@pytest.mark.parametrize("m, defines", ONE_PAIR, ids=[f"m{m}-" + "-".join(f"{k}{v}" for k, v in d)
                                                      for m, d in ONE_PAIR])
def test_one_pair_builds_fit_four_blocks(m, defines):
    """No spills under the launch bounds, where ptxas's own choice may take more registers."""
    report, _ = sass.build(sass.source("epilogue.cu", m, True, defines + [("PROD_T", "signed char"), ("SINGLE_PAIR", 1),
                                                                          ("EPILOGUE_BLOCKS", 4)]))
    registers, spills = sass.resources(report)
    assert registers <= 128 and spills == (0, 0)


@pytest.mark.skipif(sass.tool("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("tile", [(32, 32, 1, 1, 64, 4), (64, 32, 2, 1, 64, 4)], ids=str)
def test_fused_builds_on_warp_tiles_of_32(tile):
    """The fused kernel of the sweep's 32 x 32 warp tiles (bench.crossover.SWEEP_TILES) builds
    for sm_90a with nvcc alone, 16 moduli on the CRT epilogue, without spills."""
    defines = [("NIN", 1), ("NPAIRS", 1), ("EPILOGUE_CRT", 1), ("OUT_T", "double")]
    defines += list(zip(("BM", "BN", "WARPS_M", "WARPS_N", "BK", "STAGES"), tile))
    report, cubin = sass.compile_cubin(sass.source("fused.cu", 16, True, defines))
    assert cubin[:4] == b"\x7fELF"
    registers, spills = sass.resources(report)
    assert registers <= 255 and spills == (0, 0)
