#!/usr/bin/env bash
# One call on the GPU machine: GPU tests, the time split, the GEMM benchmark, FFT and the
# verification suite with its report; everything in $OUT/results.tgz, a short table last.
# Usage (device tool): OZAKI_COMMIT=<sha> bash bench/device_run.sh [PROFILE]   (default full)
#   full   all of it: GEMM n = 1024..16384, ZGEMM, FFT, verify --profile full  (under 10 min)
#   fused  tile sweep, fused/cuBLAS crossover table and host profile, all GPU tests under the chosen
#          tiles, linalg, dask and FFT benchmarks  (under 9 min; wheels for dask in .whl)
#   diag   all GPU tests, the crossover table and host profile, the fused kernel under ncu (8 min)
#   close  GPU tests in two timed groups, the crossover table, float32 GEMM (about 8 min)
#   open   the GPU tests of the last changes, certified and exact mode at n = 16384 on
#          N(0,1) and phi = 1, 3, 6 with the fraction recomputed, the dask product at 49152
#   prepared  every GPU test in two timed groups, certified and exact mode at n = 16384
#   why       cProfiles of fftn 128^3 and of a certified 16384^2 product, fftn on the cuBLAS path
#   last      GPU FFT and certified tests, FFT benchmark, certified's time at 16384, the FFT issue's
#             table (512^3 fftn and rfftn, a batch of 4096 x 1024, 2^24), a cProfile of fftn 256^3,
#             ozaki.matmul at 49152
#   benches   GPU tests of the last fixes, certified's time split, FFT and linalg (prepared operands)
#   residue   the residue GEMM as "auto" takes it (256 x 128 build): every path's same-bits tests, its own and
#             the epilogue's unit tests and the GPU FFT same-bits tests side by side; the GEMM step alone,
#             the FFT issue's table, the time per kernel of fftn 256^3, GEMM n = 4096, 8192 on auto and cuBLAS
#   cutlass   the CUTLASS residue GEMM (path "cutlass", prebuilt in build/kernels when carried): its tests and
#             the paths' same-bits tests, the GEMM step alone against cuBLAS (bench.residue_gemm), the GPU
#             FFT same-bits tests on it, the FFT table on it and on cuBLAS, GEMM n = 4096..16384 both paths
#   next      branch gpu-next: the GPU unit tests the fifth session could not run (row flags, exact pairs,
#             residue sums), the fused kernel's tests (strided planes), the FFT table, kernels of 2^24 and
#             256^3 (prepared residues read in place, zero signs skipping sine terms that vanish)
#   pairs     GPU tests of the FFT's exact pair constants, row flags, zero signs and residue sums (and every
#             prepared-operand test); the FFT issue's table; GPU time per kernel of fftn 256^3 and 1-D 2^24;
#             fftn 1024^3
#   fftpass   GPU tests of the one-pass zero signs and residue sums; the FFT issue's table; the GPU
#             time per kernel of fftn 256^3, a batch of 4096 x 1024 and 1-D 2^20 (bench.kernel_times)
#   mends     first: the GPU tests of the changes made after run bdcaf40 (linalg streams, tiny FFT rows),
#             then every GPU test in two timed groups
#   residual  GPU tests of the exact residual kernel and the FFT plans; linalg at 16384 with it; the
#             FFT table under the direct plans; fftn 1024^3
#   fftfix    GPU tests of the FFT, prepared, dask and linalg changes; the FFT issue's table after the
#             GEMM-tile, constants-cache and zero-sign fixes, 512^3 under the direct plan and on the fused
#             path, linalg at 16384, fftn 1024^3 (row blocks)
#   certify   certified mode's one-pass test (certify.cu) and per-entry exact recomputation (exact_entries):
#             their GPU tests and every GPU backend test, certified at 20..22 moduli at n = 16384 on N(0,1)
#             and phi = 1, 3, 6 beside accurate and cuBLAS, the test and the recomputation timed alone
#   graphs    small products replayed as CUDA graphs: their tests with every GPU backend, API and fused-kernel
#             test (repeated shapes now replay), eager against replayed (bench.graph_probe), the crossover table
#   replays   the graphs' and the FFT's one-pass complex products' GPU tests, eager against replayed with a
#             cProfile of replays, the crossover's small products, the FFT's 1-D, batch and 256^3 times,
#             kernels of a 2^16-point transform
#   ziv       exact mode by Ziv's strategy: the GPU tests of the residuals, the test kernel and exact mode's
#             same bits (and the graphs'), then exact both ways beside certified at 16384 (N(0,1), phi 1, 3, 6)
#             and at 4096
#   probe     where small products, GEMMs up to 16384 and FFTs spend their time: GPU time per kernel
#             against the wall time of a call, the host's cProfile; a CUDA-graph replay of small
#             products (bench.graph_probe); certified's cProfile and its time at 16384 (as certify)
#   lift      the fused kernel's cheaper stage loads and two-at-a-time CRT lift: its tests and every path's
#             same bits, the tests of session 7's post-device mends, the crossover table (kernel alone),
#             ncu instruction counts, time per kernel of small products, and 16384 at 21/22 moduli and exact
#   pieces    the residues kernel's five-piece path (digits up to 2**129: accurate and certified from 22 moduli,
#             exact slices) and the fused kernel's conversions: residue, fused, FFT and exact/certified
#             same-bits tests; the crossover table; time per kernel at 16384 accurate:22; certified and exact
#             at 16384 (N(0,1), phi = 1, 3)
#   gaps      the five-piece path unrolled by four: residue, same-bits and FFT same-bits tests; time per kernel
#             and the GPU's idle gaps at 16384 (accurate, accurate:22, exact); certified and exact at 16384
#   stores    the five-piece path (eight-byte stores, then its fold in integers): time per kernel at 16384 on
#             21 and 22 moduli, then the residue and same-bits tests
#   fftnow    the FFT table after the fused kernel's leaner stages and lift (1-D 2^16, 2^20, a batch of
#             4096 x 1024, fftn 256^3), no tests (the code ran them in run 8447b65)
#   moduli14  issue 11's squares at fewer moduli where DMMCH allows: native, accurate at 16, 15 and 14
#             moduli and fast at 15 for n = 4096, 8192, 16384 on N(0,1) and phi = 1, DMMCH on 24 entries
#   next8     branch gpu-next (the eighth session's unverified change): the residue kernel narrow (three
#             pieces, 72 registers) below 22 moduli and wide (five pieces, their constants from shared
#             memory instead of LDC at a run-time index) from 22: the residue pass timed at 16, 21 and 22
#             moduli and on the 4096 x 64^2 stack, then its tests and every path's same bits
#   s9b       why a call's wall time exceeds its kernels' sum at 16384 (accurate, exact: each timed call, the
#             SM clock, power and clock-event reasons sampled meanwhile), then moduli14
#   s9c       s9b's first part alone (its kernel_times stages failed in run 600198c), with a cProfile of two calls
#   s9d       the residue kernel under ncu at 16 and 22 moduli (n = 8192: three pieces against five), then
#             the squares and certified/exact at 16384 timed in alternation with native (common.time_paired),
#             then the FFT same-bits tests (stages.times as backend steps)
#   s9e       the residue kernel without the p = 256 test and at three blocks an SM (wide build): its GPU
#             tests, then the residue pass at 16384 on 16 and 22 moduli
#   s9a       next8 with the fused kernel's one rounding helper, and the FFT (fftn 256^3, a batch of
#             4096 x 1024, 1-D 2^16) on the auto path against the fused kernel forced
#   s10a      issue 11's ZGEMM and skinny products as they stand: ZGEMM 4096 and 8192 at 16, 15 and 14 moduli
#             (paired with cuBLAS ZGEMM, DMMCH), the time per kernel of ZGEMM 8192, the skinny products on each
#             path, the time per kernel of the 16384 square at 14 moduli
#   s10b      the residue kernel's moduli loop (a loop where unrolled it takes over 80 registers) and complex
#             operands read in place: their GPU tests, the residue pass swept over builds at 12-20 moduli,
#             ZGEMM 8192 and its time per kernel, the squares at 8192 and 16384, the FFT's same-bits tests
#   s10c      the epilogue writing a complex result's parts in place (complex_of): every GPU backend test,
#             the certified, exact-by-test, float32, FFT same-bits, dask and API tests; ZGEMM 2048-8192 at
#             16, 15 and 14 moduli and its time per kernel at 15
#   s11a      the epilogue's VEC adjacent outputs a thread and the fp8 substrate's kernels: their GPU tests
#             (and every epilogue, complex_of, fp8 and same-bits test of test_cupy_backend), the time per
#             kernel at 16384 (accurate:14) with and without VEC and the scan's L2-sized grid, the squares 4096-16384 at 16, 15 and 14
#             moduli (paired), fp8 against int8 at 8192 and 16384, ZGEMM 8192, the FFT with VEC 2 forced
#   s11b      every GPU test in three groups run at once (backends; fused; FFT, linalg, dask, API and the rest);
#             s11a ends with them too (170 s)
#   s12a      this session's changes (the one-read scan on, blocks written in place, the NEW_KERNELS now on):
#             their GPU tests, the time per kernel at 16384 (accurate:14) read once and twice, the squares
#             4096-16384 at 16, 15 and 14 moduli, ZGEMM 8192, the epilogue under ncu, then every GPU test in
#             three groups at once until 570 s
#   s13a      the FFT's long lengths rounded once (exact twiddle pairs through stage 2's recursion): the GPU
#             FFT same-bits tests with 2^17 and 3 x 2^16; issue 16's table (fftn 256^3, 512^3, 1024^3,
#             rfftn 512^3, a batch of 4096 x 1024, 1-D 2^16, 2^20, 2^24 with their bins for bench.fft_l2),
#             then every GPU test in three groups at once until 570 s
#   s13b      issue 11's table as it stands: squares 1024-16384 and ZGEMM 2048-8192 at 16, 15 and 14 moduli,
#             the stacks (4096 x 64^2, 256 x 256^2, 16 x 1024^2) and skinny products, fp8 against int8
#             at 8192 and 16384, the time per kernel at 16384 (accurate:14)
#   s13c      the FFT's axes read and written by blocks (a 1024^3 fftn within 80 GB): the GPU FFT tests (the
#             zero-signs kernel's 218-s case left out), then fftn and rfftn 1024^3 against cuFFT
#   s14a      where the time goes now (8f47d09 on): time per kernel, host profile and GPU idle gaps of fftn
#             256^3, a batch of 4096 x 1024, 1-D 2^16 and 2^20, the stack 4096 x 64^2 and n = 1024; then
#             fftn and rfftn 1024^3 against cuFFT (the cut-off session's s13c files were lost)
#   s14b      time per kernel of fftn 512^3 and 1024^3 (where the 1024^3 call's 800 ms outside the
#             products go)
#   s14c      the FFT's blocks through tiled transposes and the narrow products on the residue GEMM:
#             their GPU tests and the GPU FFT tests (the zero-signs kernel's 218-s case left out), issue
#             16's table (fftn 256^3, 512^3, 1024^3, rfftn 512^3 and 1024^3, a batch of 4096 x 1024,
#             1-D 2^16, 2^20, 2^24) and the time per kernel of fftn 1024^3
#   s14d      s14c again without the GPU FFT tests (they passed in s14c's run), after taking back the
#             one-block any_nonzero reduction that run found at 2489 ms of a 3622-ms fftn 1024^3
#   s15a      stacks on the residue GEMM in one launch (L = moduli x matrices, one epilogue), its small
#             64 x 64 ping-pong build, CUDA-graph replays on its path: their GPU tests, then the crossover
#             table of fused / residue GEMM / cuBLAS paths (and the wide build on small stacks) to 2**36, and
#             issue 11's small squares and stacks on the fused and residue-GEMM paths at 16 and 14 moduli
#   s15b      the residue GEMM's path replayed (accurate mode's bound on chip where a product replays), the
#             small build taken back: its GPU tests and the graphs', the crossover table again, issue 11's small
#             squares and stacks on each path (crossover to 2**34), time per kernel of 2048^2
#   s15c      the auto path from s15b's crossover (fused below a residue GEMM tile, the residue GEMM above):
#             its tests, the graphs' and the API's same bits, issue 11's small squares and stacks on "auto"
#   s16a      for the next device session: the GPU tests of 71a2087's mends (grid limits, graphs keyed by path,
#             the bound's k) and the paths', issue 11's small products on "auto", and its table on this card
#             (squares 8192 and 16384, ZGEMM 8192 at 16, 15 and 14 moduli)
#   s16b      one read of the rows for exact mode's plan (scan_rows.cu ROW_BITS) and one host sync for the
#             FFT's row flags (NaN/inf, tiny, real rows): their GPU tests and the FFT's, issue 16's table now and
#             at c888e7e (base/, an untracked copy made for the run) on this card, fftn 1024^3's kernels
#   s16c      s16b without the baseline (its results were lost when that call ran past the limit): the GPU
#             tests of 65b409d/fd98691, issue 16's table, fftn 1024^3's kernels, accurate mode's FFT
#   s16d      a complex operand's residues in one pass (residues.cu PARTS 2), the zero signs of both output
#             parts in one launch, the FFT's constants on a 2**-104 grid (25 moduli at 1024 points): their
#             GPU tests and the unrun ones of s16c, issue 16's table, fftn 512^3's kernels, the epilogue's VEC at 25
#   s17a      what s16d left unmeasured: ZGEMM with residue_parts on and off, fftn 1024^3's kernels
#             at 25 moduli, the GPU tests of cupy_backend and fft not run since (by file, timed)
#   s17b      the quarter turns (scheme._quarter_product: direct DFT products as four quarter-size
#             products on butterflied residues, formed in the residue pass: residue_quarters): the FFT's
#             GPU tests and the epilogue's (int8 residues by I2F), issue 16's table with them, without
#             them (OZAKI_QUARTER_MIN past every length), fftn 1024^3 (about 250 s: the budget
#             left after refused starts)
#   s18a      session 17's s17c (its starts were refused) less butterfly4's pass, with the CRT over LC limbs
#             (d0ce90f): test_fft_gpu.py whole and cupy_backend's epilogue/residues/complex tests
#             (OZAKI_NEW_KERNELS=all), a batch of 4096 x 1024 and fftn 512^3 with the quarter turns and
#             the batch without, fftn 1024^3 with them, with the complex differences unreduced
#             (OZAKI_EPILOGUE_BYTES=1,0), the batch's time per kernel, then fftn 1024^3 without them
#   s19a      (for the next session) the GPU tests s18a did not reach (but the zero-signs kernel at 4096
#             points, about 200 s) or that failed as test defects (residues_of_parts mended, butterfly4,
#             the quarter turns' same bits, times, row_specials;
#             OZAKI_NEW_KERNELS=all), then the epilogue back at 623fd36's kernels: a batch of 4096 x 1024
#             and fftn 512^3 with the quarter turns and without, fftn 1024^3 with them, and 2048-point
#             batches (direct since ed0c56a) with the quarter turns and without; the epilogue built for
#             4 and 5 blocks of 128 threads an SM (OZAKI_EPILOGUE_BLOCKS: its loads issued further
#             ahead) on the same shapes, and on issue 11's stacks and n = 2048 on "auto" and the
#             residue GEMM, and the 2048-point batch on its old plan (six-step) (about 560 s of stage
#             limits: a call cut short keeps its earlier stages)
#   s19b      the epilogue's launch bounds (4 blocks, one slice pair) and __ldg loads on by default: the
#             epilogue, residues_of_parts and every same-bits GPU test of the backend and the FFT in two
#             groups at once, fftn 1024^3 and issue 16's table at the GPU's defaults (fftn 256^3, 512^3,
#             rfftn 512^3, a batch of 4096 x 1024, 1-D 2^16, 2^20, 2^24), the bounds off
#             (OZAKI_EPILOGUE_BLOCKS=0) on fftn 512^3 and the batch, the batch's time per kernel with the
#             GPU's idle gaps and the host's cProfile (about 360 s of stage limits)
#   s20a      (branch gpu-next, for the next session) the quarter turns' row blocks written in place: the
#             interleaved epilogue into views and the quarter turns' same bits on every path, then with the
#             quarter turns on and off (OZAKI_NEW_KERNELS=all / the defaults) fftn 1024^3 (time per kernel:
#             the float64 copies) and batches of 1024 points of 4096, 16384 and 65536 rows (where the
#             quarter turns start to pay on the GPU: a rows threshold for quarter_products); then fftn
#             1024^3 and the batch with the epilogue's complex differences unreduced, and with two outputs
#             a thread at 3 blocks as well (about 510 s of stage limits)
#   s20c      the twentieth session's defaults (quarter turns from 65536 rows, Karatsuba's int8
#             differences unreduced, the residue GEMM's integer reduction) in about 240 s (the budget
#             left): their GPU tests, fftn 1024^3 and a batch of 65536 x 1024 with the integer and the
#             float64 reduction, a short FFT table
#   s21e      what run da86e14 (s21c: lane pairs, the residue GEMM's tiles) left, in the 410 s of
#             device time left: the GPU tests it did not reach, the quarter turns by points, issue
#             16's table (about 300 s)
#   s22a      s21e (the GPU tests run da86e14 did not reach, the quarter turns by points, issue
#             16's table) with the residue GEMM's tests at its other two tiles in both reductions
#             (the float64 one's table mended), the CUDA graphs' tests (their key now holds the
#             call-time settings) and the tiles side by side in one process (bench.residue_tiles:
#             issue 11's small products, two FFT batches, fftn 1024^3; about 420 s)
#   s22c      s22a and the big products of s22b in one call (device starts kept failing; about
#             520 s): s22a's tests, tiles and FFT tables, then squares 8192 and 16384 and ZGEMM 8192
#             at accurate and accurate:14 (DMMCH on 8 entries)
#   s22d      what 446 s of device time left allows (about 230 s): the GPU tests of the session's
#             changes (the residue GEMM at its two other tiles in both reductions, the CUDA graphs'
#             call settings; the backend's and the quarter turns' tests s21c did not reach) in
#             parallel, then the tiles side by side on issue 11's small products and the batch
#   s22e      the last 266 s: the residue GEMM's tests at its two other tiles (both reductions) and
#             the CUDA graphs' call-setting test, in parallel (about 100 s)
#   s24a      run 2a5d1c7 put the quarter turns ahead of one product from 2**24 points (1024 and
#             2048): the GPU quarter-turn tests from 256 points, then one product against the
#             quarter turns from 2**22 points and at 256 and 512 points (OZAKI_GPU_QUARTER_MIN),
#             issue 11's small products at accurate, issue 16's table with rfftn 512^3 and 2^24
#             (about 330 s)
#   s24b      planned as the session's last call: s22b's tables (issue 11 on "auto" in four modes, ZGEMM,
#             fp8 against int8), the quarter turns' new threshold on 8192 x 1024 and 4096 x 2048
#             beside cuFFT, and the host's share of a call (bench.kernel_times: fft 2^16, a batch
#             of 4096 x 1024, a stack of 4096 x 64^2) (about 420 s)
#   s24c      s24b without the fp8 substrate (the device time left: about 340 s)
#   s24d      s24b without issue 11's tables (the 385 s left: about 100 s)
#   s32b      after s32a: issue 11's big squares (8192, 16384; accurate:14 and accurate) and ZGEMM 8192
#             on cuBLAS's path and on the residue GEMM with epilogue_mma, at its tile walks
#             (SWIZZLE, CLUSTER_M: native.RESIDUE_GEMM_TILES; carry build/kernels, prebuilt), after
#             the walks' same-bits tests; the short tile at 3 stages against 4; a direct replay's
#             host profile (about 570 s)
#   s32a      everything else session 31 wrote and could not run (no machine was lent):
#             epilogue_mma's, the shared header's, tiled_bt's and the graphs' GPU tests, and the
#             Fractions-checked ones with round_convert, at once; then epilogue_mma (products real
#             and complex, the FFT), tiled_bt (the stacks) and round_convert off and on in turns
#             (about 570 s)
#   s30a      crt_mma's GPU tests and every test of test_fused.py with it on (as s29b), the graphs' tests
#             (replays over the caller's own inputs) at once; then, where crt_mma's passed, the tile sweep on
#             the small stacks with it (3 and 2 pipeline stages on the short tile), the stacks with graphs'
#             direct inputs off and on in turns (crt_mma on), and the FFT's batches direct and as six-step
#             on the fused kernel with crt_mma (about 450 s)
#   s30b      issue 11's tables without fp8 and issue 16's (cubes 256, 512, rfftn 512, the batch of
#             4096 x 1024, 2^16, 2^20, 2^24) at the defaults (about 330 s)
#   s29a      the fused kernel's CRT on the tensor cores (NEW_KERNELS crt_mma): its GPU tests (the
#             defaults), the graphs' (the miss rule) and, with OZAKI_NEW_KERNELS=all, the int32 limits'
#             and two words' at once; the small stacks and 1024^2 without and with it in turns, on
#             "auto" and on the fused path; the tile sweep on the small stacks with it; the stack
#             4096 x 64^2's kernels under ncu with it (about 520 s)
#   s29b      after run b409ea8 (s29a; two test defects mended): crt_mma's GPU tests, and every test of
#             test_fused.py with crt_mma on beside the defaults, at once; then, where both passed, the
#             FFT's batches of 4096 x 512 and 4096 x 1024 direct and as six-step on the fused kernel
#             with crt_mma, and issue 11's tables without fp8 with crt_mma on (about 450 s)
#   s29c      s29b's tests alone (the device time left after failed starts: about 120 s)
#   s27a      exact-mode stacks through graphs (pieces of a power of two matrices): the graph, stack
#             and FFT same-bits tests, the exact stacks through graphs and eager; fused_int_mod's
#             tests and its timings against the defaults in turns; FFT cubes 128 and 256, issue
#             11's tables without fp8 (about 500 s)
#   s26e      gpu-next (B^T into the graphs, the two-word rounding): their GPU tests, then small products
#             and stacks at main's code (carry a copy of main's ozaki/ as prev/), at this one, and at
#             this one without two_words, in turns; exact-mode stacks let through graphs once, with
#             why their captures fail (about 480 s)
#   s26d      issue 11's tables without fp8, alone (about 230 s; for the H200, the issue's card)
#   s26c      the rounding's GPU tests s26b did not reach (float32, the fused kernel, the FFT's same
#             bits, residuals and certified), the graphs' work cap (2**33 against 2**34 and graphs
#             off) on 2048^2 and two stacks, issue 16's small transforms (about 260 s)
#   s26b      after the short rows' scan and the rounding's powers of two: their GPU tests (the
#             same bits on every path), small products and stacks with graphs and without, the
#             stack's kernels under ncu (about 330 s)
#   s26a      issue 11's tables without fp8 at the current code, exact mode's stack with graphs
#             and without (the graphs' refused reasons printed), then two small calls' kernels
#             under Nsight Compute (the stack of 4096 x 64^2, the batch of 4096 x 1024; about 400 s)
#   s25a      where the small products' and transforms' GPU time goes, kernel by kernel under
#             Nsight Compute (duration, DRAM bytes, throughput, occupancy, registers; eager, no
#             graphs), then issue 11's tables without fp8 (about 330 s)
#   s25b      FFT blocks replayed as CUDA graphs by speculation: the graph tests (products in
#             exact mode too, FFT blocks), the eager FFT tests, then bench.fft on fresh data
#             with graphs and without, side by side (about 300 s)
#   s22b      issue 11's table on "auto" (squares 1024..16384, the three stacks, the two skinny
#             products at accurate, accurate:15, accurate:14 and fast, DMMCH on 8 entries), ZGEMM
#             2048..8192, the fp8 substrate against int8 at 8192 and 16384 (about 330 s)
# (Older profiles are in git history: quick, probe, check, final, fft, extra, crt; an unknown name stops.)
set -u
profile=${1:-full}
case "$profile" in
    full|fused|diag|close|open|prepared|why|last|benches|fftfix|residual|mends|fftpass|pairs|next|cutlass|residue|certify|probe|graphs|replays|ziv|lift|pieces|gaps|stores|fftnow|moduli14|next8|s9a|s9b|s9c|s9d|s9e|s10a|s10b|s10c|s11a|s11b|s12a|s13a|s13b|s13c|s14a|s14b|s14c|s14d|s15a|s15b|s15c|s16a|s16b|s16c|s16d|s17a|s17b|s18a|s19a|s19b|s20a|s20c|s21e|s22a|s22b|s22c|s22d|s22e|s24a|s24b|s24c|s24d|s25a|s25b|s25c|s26a|s26b|s26c|s26d|s26e|s27a|s29a|s29b|s29c|s30a|s30b|s32a|s32b) ;;
    *) echo "device_run.sh: unknown profile '$profile'" >&2; exit 2 ;;
esac
OUT=${OUT:-bench/results/out}
W=$(mktemp -d)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
# nvcc-built libraries (ozaki/backends/native.py): the ones built beforehand, when carried
[ -d build/kernels ] && export OZAKI_KERNEL_CACHE=$PWD/build/kernels
# Wheels the GPU machine lacks (dask and friends; it has no internet), carried in .whl/
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=$PWD:/tmp/site
fi
# the residue GEMM: found in that cache, else compiled (about a minute; nvcc, CUTLASS from .whl)
python3 -m ozaki build > "$W/build.txt" 2>&1
stage() {   # stage NAME SECONDS CMD...: run with a time limit, log to $W/NAME.txt
    local name=$1 limit=$2; shift 2
    local t0=$(date +%s)
    timeout "$limit" "$@" > "$W/$name.txt" 2>&1
    echo "$name: rc=$? $(( $(date +%s) - t0 )) s" >> "$W/stages.txt"
    tar czf "$OUT/results.tgz" -C "$W" .        # what finished comes back even if a later stage is cut
}
gpu_tests() {   # gpu_tests NAME SECONDS PYTEST-ARGS...: the GPU tests asked, timed, with a junit file
    local name=$1 limit=$2; shift 2
    stage "$name" "$limit" python3 -m pytest -q --durations=6 -m gpu "$@" -p no:cacheprovider --junitxml="$W/$name.xml"
}
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv,noheader > "$W/device.txt"
modes="accurate accurate:15 accurate:14 fast fast:15 exact"
issue11_tables() {   # issue 11's table on "auto" in four modes, ZGEMM, the fp8 substrate against int8 (about 300 s;
                     # "nofp8": without the last, about 220 s)
    stage gemm 170 python3 -m bench.gemm --sizes 1024 2048 4096 8192 16384 --shapes 4096x64x64x64 \
        256x256x256x256 16x1024x1024x1024 1x16384x256x16384 1x16384x16384x64 --families normal --no-emulated \
        --samples 8 --modes accurate accurate:15 accurate:14 fast --out "$W/gemm.json"
    stage zgemm 50 python3 -m bench.gemm --sizes 2048 4096 8192 --families complex --no-emulated --samples 8 \
        --modes accurate accurate:15 --out "$W/zgemm.json"
    [ "${1:-}" = nofp8 ] && return
    stage gemm_fp8 80 python3 -m bench.gemm --sizes 8192 16384 --families normal --no-emulated --samples 4 \
        --substrates int8 fp8 --modes accurate --out "$W/gemm_fp8.json"
}
one_product_and_quarter_turns() {   # SECONDS "ENV..." BENCH.FFT-ARGS...: the same transforms as one
    # product, then as the quarter turns at any size (with ENV, e.g. a lower OZAKI_GPU_QUARTER_MIN)
    local limit=$1 quarter_env=$2; shift 2
    stage fft_one_product "$limit" env OZAKI_QUARTER_POINTS_MIN=1000000000000 python3 -m bench.fft "$@" \
        --out "$W/fft_one_product.json"
    stage fft_quarter_turns "$limit" env OZAKI_QUARTER_POINTS_MIN=0 $quarter_env python3 -m bench.fft "$@" \
        --out "$W/fft_quarter_turns.json"
}
ncu_calls() {   # each small call's kernels under Nsight Compute, one CSV each (OZAKI_CUDA_GRAPHS=0: eager)
    local metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size
    metrics=$metrics,launch__block_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed
    metrics=$metrics,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
    metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
    local call calls=("$@")
    [ ${#calls[@]} -gt 0 ] || calls=("stack 4096x64" "stack 256x256" "matmul 1024" "matmul 2048" "batch 4096x1024" "fft 1048576")
    for call in "${calls[@]}"; do
        stage "ncu_${call// /_}" 60 env OZAKI_CUDA_GRAPHS=0 ncu --clock-control none --profile-from-start off \
            --csv --metrics "$metrics" python3 -m bench.kernel_times $call --ncu
    done
}
new_kernels() {   # new_kernels -NAME | +NAME: OZAKI_NEW_KERNELS's value for the defaults without (with) NAME
    python3 -c "import sys; from ozaki.backends.cupy_backend import NEW_KERNELS_ON as on; \
sign, name = sys.argv[1][0], sys.argv[1][1:]; print(','.join([n for n in on if n != name] + [name] * (sign == '+')))" "$1"
}
with_and_without() {   # with_and_without NAME[:TAG] SECONDS BENCH.GEMM-ARGS...: bench.gemm in two turns, each first
    # at the defaults without NEW_KERNELS' NAME (stage gemm_NAME[_TAG]_off_TURN), then with it (gemm_NAME[_TAG]_on_TURN)
    local name=${1%%:*} label=${1/:/_} limit=$2 turn; shift 2
    local off on
    off=$(new_kernels "-$name")
    on=$(new_kernels "+$name")
    for turn in 1 2; do
        stage "gemm_${label}_off_$turn" "$limit" env OZAKI_NEW_KERNELS="$off" python3 -m bench.gemm "$@" \
            --out "$W/gemm_${label}_off_$turn.json"
        stage "gemm_${label}_on_$turn" "$limit" env OZAKI_NEW_KERNELS="$on" python3 -m bench.gemm "$@" \
            --out "$W/gemm_${label}_on_$turn.json"
    done
}
if [ "$profile" = fused ]; then      # one call: tiles swept and chosen, then everything under them
    stage crossover 160 python3 -m bench.crossover --sweep --profile --tiles-out "$W/tiles.txt" --out "$W/crossover.json"
    [ -s "$W/tiles.txt" ] && export OZAKI_FUSED_TILES=$(cat "$W/tiles.txt")
    stage gpu_tests 180 python3 -m pytest -q --maxfail=10 -m gpu tests -p no:cacheprovider --junitxml="$W/gpu_tests.xml"
    stage linalg 80 python3 -m bench.linalg --sizes 8192 16384 --out "$W/linalg.json"
    stage dask 60 python3 -m bench.dask_gemm --sizes 32768 --out "$W/dask.json"
    stage fft 40 python3 -m bench.fft --cubes 128 256 --sizes 65536 1048576 --repeats 2 --out "$W/fft.json"
elif [ "$profile" = diag ]; then      # GPU tests, the crossover table, the fused kernel under ncu
    stage gpu_tests 240 python3 -m pytest -q --maxfail=20 -m gpu tests -p no:cacheprovider --junitxml="$W/gpu_tests.xml"
    stage crossover 150 python3 -m bench.crossover --profile --out "$W/crossover.json"
    stage ncu 90 ncu --clock-control none -k regex:fused --launch-skip 2 --launch-count 6 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section ComputeWorkloadAnalysis --section InstructionStats python3 -m bench.fused_probe
elif [ "$profile" = close ]; then     # GPU tests by file (timed), float32 rows, the crossover table
    stage gpu_backends 150 python3 -m pytest -q --durations=8 -m gpu tests/backends tests/test_api.py tests/gemm \
        -p no:cacheprovider --junitxml="$W/gpu_backends.xml"
    stage gpu_rest 170 python3 -m pytest -q --durations=8 -m gpu tests/fft tests/linalg tests/test_dask.py \
        tests/test_certified.py tests/test_float32.py -p no:cacheprovider --junitxml="$W/gpu_rest.xml"
    stage crossover 100 python3 -m bench.crossover --out "$W/crossover.json"
    stage gemm_f32 50 python3 -m bench.gemm --dtype float32 --sizes 4096 8192 --families normal --no-emulated \
        --samples 4 --repeats 3 --modes accurate --out "$W/gemm_f32.json"
elif [ "$profile" = open ]; then      # what the open issues still need measured
    stage gpu_changed 150 python3 -m pytest -q --durations=5 -m gpu tests/backends/test_cupy_float32.py \
        tests/backends/test_fused.py tests/backends/test_kulisch_cuh.py tests/test_certified.py \
        tests/test_float32.py -p no:cacheprovider --junitxml="$W/gpu_changed.xml"
    stage gemm_certified 170 python3 -m bench.gemm --sizes 16384 --families normal phi1 phi3 phi6 --no-emulated \
        --samples 4 --repeats 3 --modes accurate certified exact --out "$W/gemm_certified.json"
    stage dask 200 python3 -m bench.dask_gemm --sizes 49152 --chunk 8192 --repeats 1 --out "$W/dask.json"
elif [ "$profile" = prepared ]; then  # after the prepared-operands merge: every GPU test, certified timings
    stage gpu_backends 200 python3 -m pytest -q --durations=5 -m gpu tests/backends tests/test_api.py tests/gemm \
        -p no:cacheprovider --junitxml="$W/gpu_backends.xml"
    stage gpu_rest 150 python3 -m pytest -q --durations=5 -m gpu tests/fft tests/linalg tests/test_dask.py \
        tests/test_certified.py tests/test_float32.py -p no:cacheprovider --junitxml="$W/gpu_rest.xml"
    stage gemm_certified 150 python3 -m bench.gemm --sizes 16384 --families normal phi1 phi3 phi6 --no-emulated \
        --samples 4 --repeats 3 --modes certified exact --out "$W/gemm_certified.json"
elif [ "$profile" = benches ]; then   # the GPU tests the last run lost, certified's time, FFT and linalg
    stage gpu_fix 110 python3 -m pytest -q --durations=5 -m gpu tests/backends/test_cupy_float32.py \
        tests/backends/test_prepared_gpu.py tests/test_certified.py tests/test_api.py \
        -p no:cacheprovider --junitxml="$W/gpu_fix.xml"
    stage gpu_fused_rest 130 python3 -m pytest -q --durations=5 -m gpu tests/backends/test_fused.py \
        -k "moduli_counts or exact_slices_run or complex_paths or stacks_and_broadcast or int32_limits or bound_maxima or auto_path or current_stream" \
        -p no:cacheprovider --junitxml="$W/gpu_fused_rest.xml"
    stage certified 50 python3 -m bench.certified --n 16384 --calls 35 38 41 --repeats 2 --out "$W/certified.json"
    stage fft 90 python3 -m bench.fft --cubes 128 256 --sizes 65536 1048576 --repeats 2 --out "$W/fft.json"
    stage linalg 110 python3 -m bench.linalg --sizes 16384 --out "$W/linalg.json"
elif [ "$profile" = why ]; then      # where 3-D FFTs and certified products spend their time
    stage gpu_f32 40 python3 -m pytest -q -m gpu tests/backends/test_cupy_float32.py -k widen -p no:cacheprovider
    stage fft_profile 60 env CUDA_LAUNCH_BLOCKING=1 python3 -m bench.fft --profile 128
    stage fft_cublas 50 python3 -m bench.fft --cubes 128 --sizes --repeats 2 --path cublas --out "$W/fft_cublas.json"
    stage certified_profile 60 env CUDA_LAUNCH_BLOCKING=1 python3 -m bench.certified --profile
elif [ "$profile" = last ]; then     # the FFT's zero signs on the device, certified's reduction
    stage gpu_last 150 python3 -m pytest -q --durations=5 -m gpu tests/fft/test_fft_gpu.py tests/test_certified.py \
        tests/backends/test_cupy_float32.py tests/backends/test_prepared_gpu.py tests/test_dask.py \
        -p no:cacheprovider --junitxml="$W/gpu_last.xml"
    stage fft 60 python3 -m bench.fft --cubes 128 256 --sizes 65536 1048576 --repeats 2 --out "$W/fft.json"
    stage certified 40 python3 -m bench.certified --n 16384 --calls 38 --repeats 2 --out "$W/certified.json"
    stage fft_table 150 python3 -m bench.fft --cubes 512 --real-cubes 512 --batches 4096x1024 --sizes 16777216 \
        --repeats 2 --out "$W/fft_table.json"
    stage fft_profile 60 env CUDA_LAUNCH_BLOCKING=1 python3 -m bench.fft --profile 256
    stage gemm49k 100 python3 -m bench.gemm --sizes 49152 --families normal --no-emulated --samples 2 \
        --repeats 1 --modes accurate --out "$W/gemm49k.json"
elif [ "$profile" = graphs ]; then   # CUDA-graph replays of small products
    stage gpu_graphs 270 python3 -m pytest -q --durations=8 -m gpu tests/backends/test_graphs.py \
        tests/backends/test_cupy_backend.py tests/backends/test_fused.py tests/test_api.py -p no:cacheprovider \
        --junitxml="$W/gpu_graphs.xml"
    stage graph_probe 80 python3 -m bench.graph_probe --out "$W/graph_probe.json"
    stage crossover 120 python3 -m bench.crossover --out "$W/crossover.json"
elif [ "$profile" = lift ]; then   # the fused kernel's leaner stages and CRT lift
    gpu_tests gpu_fused 240 tests/backends/test_fused.py &
    gpu_tests gpu_mends 240 tests/backends/test_graphs.py \
        tests/backends/test_cupy_backend.py tests/backends/test_certify_cuh.py tests/test_exact_by_test.py \
        -k "graph or replay or exact_by_test or by_test or residual or uncertified or certify or zero" &
    wait
    stage crossover 90 python3 -m bench.crossover --out "$W/crossover.json"
    for c in "stack 4096x64" "stack 256x256" "matmul 512" "matmul 1024"; do
        set -- $c
        stage "kernels_$1_$2" 60 python3 -m bench.kernel_times $1 $2 --top 12
    done
    for md in accurate:21 accurate:22 exact; do
        stage "kernels_16384_${md/:/_}" 60 python3 -m bench.kernel_times matmul 16384 --mode $md --top 14 \
            --cprofile 1
    done
    stage ncu 100 ncu --clock-control none -k regex:fused --launch-skip 2 --launch-count 4 \
        --section SpeedOfLight --section LaunchStats --section Occupancy --section InstructionStats \
        python3 -m bench.fused_probe
elif [ "$profile" = pieces ]; then  # residues of digits up to 2**129 in one step; fused conversions
    gpu_tests gpu_residues 240 tests/backends/test_cupy_backend.py \
        tests/test_certified.py tests/test_exact_by_test.py &
    gpu_tests gpu_fused 240 tests/backends/test_fused.py &
    gpu_tests gpu_fft 240 tests/fft/test_fft_gpu.py -k "same_bits" &
    wait
    stage crossover 90 python3 -m bench.crossover --out "$W/crossover.json"
    stage kernels_16384_accurate_22 60 python3 -m bench.kernel_times matmul 16384 --mode accurate:22 --top 8
    stage kernels_stack_4096x64 40 python3 -m bench.kernel_times stack 4096x64 --top 8
    stage certified 200 python3 -m bench.certified --n 16384 --families normal phi3 --moduli 22 \
        --repeats 2 --out "$W/certified.json"
elif [ "$profile" = gaps ]; then  # the five-piece residues unrolled; where the GPU idles at 16384
    gpu_tests gpu_residues 200 tests/backends/test_cupy_backend.py \
        -k "residues or same_bits or certif" &
    gpu_tests gpu_fft 200 tests/fft/test_fft_gpu.py -k "same_bits" &
    wait
    for md in accurate accurate:22 exact; do
        stage "kernels_16384_${md/:/_}" 60 python3 -m bench.kernel_times matmul 16384 --mode $md --top 8 --gaps 8
    done
    stage certified 150 python3 -m bench.certified --n 16384 --families normal phi1 phi3 --moduli 22 \
        --repeats 2 --out "$W/certified.json"
elif [ "$profile" = stores ]; then  # the five-piece residues in eight-byte stores
    for md in accurate:21 accurate:22; do
        stage "kernels_16384_${md/:/_}" 60 python3 -m bench.kernel_times matmul 16384 --mode $md --top 4
    done
    gpu_tests gpu_residues 150 tests/backends/test_cupy_backend.py \
        -k "residues or certif or same_bits_large" &
    gpu_tests gpu_fft 150 tests/fft/test_fft_gpu.py -k "same_bits" &
    wait
elif [ "$profile" = fftnow ]; then  # the FFT's times on the current kernels
    stage fft 120 python3 -m bench.fft --cubes 256 --batches 4096x1024 --sizes 65536 1048576 --repeats 3 \
        --out "$W/fft.json"
elif [ "$profile" = moduli14 ] || [ "$profile" = s9b ]; then  # the squares at 14-16 moduli against native, with DMMCH
    if [ "$profile" = s9b ]; then
        for md in native accurate exact; do
            stage "kernels_16384_$md" 70 python3 -m bench.kernel_times matmul 16384 --mode $md --top 6 --gaps 4 --clocks
        done
    fi
    stage gemm 300 python3 -m bench.gemm --sizes 4096 8192 16384 --families normal phi1 --no-emulated \
        --samples 24 --repeats 3 --modes accurate accurate:15 accurate:14 fast:15 --out "$W/gemm.json"
elif [ "$profile" = s10a ]; then
    stage zgemm 150 python3 -m bench.gemm --sizes 4096 8192 --families complex --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 fast:14 --out "$W/zgemm.json"
    for md in accurate accurate:14; do
        stage "kernels_z8192_${md/:/_}" 60 python3 -m bench.kernel_times zmatmul 8192 --mode $md --top 14
    done
    stage gemm_skinny 150 python3 -m bench.gemm --sizes --shapes 1x16384x256x16384 1x16384x16384x64 \
        --paths auto cutlass cublas --families normal --no-emulated --samples 12 --repeats 5 --modes accurate \
        --out "$W/gemm_skinny.json"
    stage kernels_16384_accurate_14 45 python3 -m bench.kernel_times matmul 16384 --mode accurate:14 --top 14
elif [ "$profile" = s11a ]; then
    export OZAKI_NEW_KERNELS=all       # cupy_backend.NEW_KERNELS (run 024cda9 on an H100: two kept, two removed)
    gpu_tests gpu_epilogue 150 tests/backends/test_cupy_backend.py -k "epilogue or complex_of or same_bits or fp8 or row_strides or complex_result_without_copy or residues_kernel or scan_rows"
    stage kernels_16384_after 45 python3 -m bench.kernel_times matmul 16384 --mode accurate:14 --top 8
    stage kernels_16384_before 45 env OZAKI_NEW_KERNELS=none python3 -m bench.kernel_times \
        matmul 16384 --mode accurate:14 --top 6
    stage gemm 200 python3 -m bench.gemm --sizes 4096 8192 16384 --families normal --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/gemm.json"
    stage gemm_fp8 90 python3 -m bench.gemm --sizes 8192 16384 --families normal --no-emulated --samples 12 \
        --repeats 3 --modes accurate --substrates int8 fp8 --out "$W/gemm_fp8.json"
    stage zgemm 80 python3 -m bench.gemm --sizes 8192 --families complex --no-emulated --samples 12 \
        --repeats 3 --modes accurate accurate:15 accurate:14 --out "$W/zgemm.json"
    for v in auto 2; do    # the FFT's complex epilogues (26-27 moduli, one pair): VEC 1 by the table, 2 forced
        stage "fft_vec$v" 40 env OZAKI_EPILOGUE_VEC=${v/auto/} \
            python3 -m bench.fft --cubes 256 --sizes --repeats 2 --out "$W/fft_vec$v.json"
    done
fi
if [ "$profile" = s12a ]; then
    export OZAKI_NEW_KERNELS=all       # with scan_one_read (run 2604612: slower, removed since)
    gpu_tests gpu_changed 150 tests/backends/test_cupy_backend.py \
        -k "scan_rows or blocked or epilogue or fp8 or complex_result_without_copy"
    stage kernels_16384 45 python3 -m bench.kernel_times matmul 16384 --mode accurate:14 --top 10
    stage kernels_16384_two_reads 45 env OZAKI_NEW_KERNELS=epilogue_vec,fp8_digits python3 -m bench.kernel_times \
        matmul 16384 --mode accurate:14 --top 10
    stage gemm 120 python3 -m bench.gemm --sizes 4096 8192 16384 --families normal --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/gemm.json"
    stage zgemm 70 python3 -m bench.gemm --sizes 8192 --families complex --no-emulated --samples 12 \
        --repeats 3 --modes accurate:15 accurate:14 --out "$W/zgemm.json"
    stage ncu_epilogue 80 ncu --clock-control none -k regex:^epilogue --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats \
        python3 -c "import cupy, numpy as np, ozaki; rng = np.random.default_rng(5)
A, B = (cupy.asarray(rng.standard_normal((16384, 16384))) for _ in range(2))
ozaki.matmul(A, B, mode='accurate', num_moduli=14); cupy.cuda.Device().synchronize()"
fi
if [ "$profile" = s13a ]; then
    gpu_tests gpu_fft_changed 90 tests/fft/test_fft_gpu.py -k same_bits
    stage fft 150 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft.json"
    stage fft_1024 60 python3 -m bench.fft --cubes 1024 --sizes --repeats 1 --out "$W/fft_1024.json"
elif [ "$profile" = s13c ]; then
    gpu_tests gpu_fft 200 tests/fft -k "not test_zero_signs_kernel_matches_numpy"
    stage fft_1024 200 python3 -m bench.fft --cubes 1024 --real-cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
elif [ "$profile" = s14a ]; then
    for w in "fftn 256" "batch 4096x1024" "fft 65536" "fft 1048576" "stack 4096x64" "matmul 1024"; do
        stage "kernels_${w// /_}" 60 python3 -m bench.kernel_times $w --top 16 --gaps 6 --cprofile 1
    done
    stage fft_1024 200 python3 -m bench.fft --cubes 1024 --real-cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
elif [ "$profile" = s14b ]; then
    for w in "fftn 512" "fftn 1024"; do
        stage "kernels_${w// /_}" 150 python3 -m bench.kernel_times $w --top 24 --gaps 6
    done
elif [ "$profile" = s14c ] || [ "$profile" = s14d ]; then
    gpu_tests gpu_changed 120 tests/backends/test_cupy_backend.py tests/backends/test_fused.py \
        -k "contiguous or any_nonzero or auto_path or same_bits_normal"
    [ "$profile" = s14c ] && gpu_tests gpu_fft 200 tests/fft -k "not test_zero_signs_kernel_matches_numpy"
    stage fft 150 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft.json"
    stage fft_1024 150 python3 -m bench.fft --cubes 1024 --real-cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
    stage kernels_fftn_1024 100 python3 -m bench.kernel_times fftn 1024 --top 24 --gaps 4
    # the same with ozaki as it was at 8f47d09 (base/, an untracked copy made for the run): the card's
    # baseline; run from base/, since python -m puts the working directory first on the path
    [ -d base/ozaki ] && (cd base && stage kernels_fftn_1024_base 100 env PYTHONPATH=$OLDPWD:$PYTHONPATH \
        python3 -m bench.kernel_times fftn 1024 --top 24 --gaps 4)
elif [ "$profile" = s15a ]; then
    gpu_tests gpu_paths 150 tests/backends/test_fused.py tests/backends/test_graphs.py tests/backends/test_residue_gemm.py
    gpu_tests gpu_epilogue 60 tests/backends/test_cupy_backend.py -k "epilogue or stack"
    stage crossover 200 python3 -m bench.crossover --max-work $((1 << 36)) --repeats 5 --out "$W/crossover.json"
    stage gemm_small 170 python3 -m bench.gemm --sizes 1024 2048 4096 --shapes 4096x64x64x64 256x256x256x256 \
        16x1024x1024x1024 --paths auto fused cutlass --families normal --no-emulated --samples 12 --repeats 5 \
        --modes accurate accurate:14 --out "$W/gemm_small.json"
elif [ "$profile" = s15b ]; then
    gpu_tests gpu_paths 90 tests/backends/test_graphs.py tests/backends/test_fused.py \
        -k "graphs or replays or residue_gemm_takes or stacks_and_broadcast or auto_path"
    stage crossover 45 python3 -m bench.crossover --max-work $((1 << 34)) --repeats 5 --out "$W/crossover.json"
    stage gemm_small 50 python3 -m bench.gemm --sizes 1024 2048 4096 --shapes 4096x64x64x64 256x256x256x256 \
        16x1024x1024x1024 --paths auto fused cutlass --families normal --no-emulated --samples 12 --repeats 5 \
        --modes accurate accurate:14 --out "$W/gemm_small.json"
    stage kernels_matmul_2048 25 python3 -m bench.kernel_times matmul 2048 --top 14 --gaps 4
elif [ "$profile" = s15c ]; then
    gpu_tests gpu_auto 90 tests/backends/test_graphs.py tests/backends/test_fused.py tests/test_api.py \
        -k "graphs or replays or auto_path or stacks_and_broadcast or complex_paths or same_bits"
    stage gemm_small 50 python3 -m bench.gemm --sizes 512 1024 2048 4096 --shapes 4096x64x64x64 1024x128x128x128 \
        256x256x256x256 16x1024x1024x1024 --families normal --no-emulated --samples 12 --repeats 5 \
        --modes accurate accurate:14 --out "$W/gemm_small.json"
elif [ "$profile" = s16a ]; then
    gpu_tests gpu_mends 150 tests/backends/test_graphs.py tests/backends/test_fused.py tests/backends/test_residue_gemm.py \
        -k "graphs or replays or auto_path or stacks_and_broadcast or complex_paths or residue_gemm_takes or residues_of"
    stage gemm_small 60 python3 -m bench.gemm --sizes 1024 2048 4096 --shapes 4096x64x64x64 256x256x256x256 \
        16x1024x1024x1024 --families normal --no-emulated --samples 12 --repeats 5 \
        --modes accurate accurate:14 --out "$W/gemm_small.json"
    stage gemm 170 python3 -m bench.gemm --sizes 8192 16384 --families normal --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/gemm.json"
    stage zgemm 80 python3 -m bench.gemm --sizes 8192 --families complex --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/zgemm.json"
elif [ "$profile" = s16b ]; then
    gpu_tests gpu_changed 150 tests/fft tests/backends/test_prepared_gpu.py tests/test_exact_by_test.py \
        tests/backends/test_cupy_backend.py -k "not test_zero_signs_kernel_matches_numpy and (fft or row_bits or row_specials or exact or prepared or same_bits)"
    fft_table() {   # fft_table SUFFIX: issue 16's table, the cubes to 512^3 and then 1024^3
        stage "fft$1" 90 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
            --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft$1.json"
        stage "fft_1024$1" 55 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 --out "$W/fft_1024$1.json"
    }
    fft_table ""
    # the same with ozaki as it was at c888e7e (base/: the card's baseline), run from base/
    [ -d base/ozaki ] && (cd base && PYTHONPATH=$OLDPWD/base:$PYTHONPATH fft_table _base)
    stage kernels_fftn_1024 50 python3 -m bench.kernel_times fftn 1024 --top 24 --gaps 4
    stage fft_accurate 45 python3 -m bench.fft --mode accurate --cubes 512 --sizes 65536 1048576 --repeats 3 \
        --out "$W/fft_accurate.json"
    stage host_fft_65536 25 python3 -m bench.kernel_times fft 65536 --top 30 --cprofile 10
elif [ "$profile" = s16c ]; then
    gpu_tests gpu_changed 150 tests/fft tests/backends/test_prepared_gpu.py tests/test_exact_by_test.py \
        tests/backends/test_cupy_backend.py -k "not test_zero_signs_kernel_matches_numpy and (fft or row_bits or row_specials or exact or prepared or same_bits)"
    stage fft 90 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft.json"
    stage fft_1024 55 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
    stage fft_accurate 45 python3 -m bench.fft --mode accurate --cubes 512 --sizes 65536 1048576 --repeats 3 \
        --out "$W/fft_accurate.json"
    stage kernels_fftn_1024 50 python3 -m bench.kernel_times fftn 1024 --top 24 --gaps 4
elif [ "$profile" = s16d ]; then
    export OZAKI_NEW_KERNELS=all        # residue_parts and zero_signs_parts: off by default until this run
    gpu_tests gpu_changed 150 tests/backends/test_cupy_backend.py tests/fft/test_fft_gpu.py \
        tests/backends/test_prepared_gpu.py -k "residues_of_parts or (zero_signs and not 4096) or row_specials \
        or row_bits or complex_same_bits or complex_stacks or pair_gpu or same_bits_as_cpu or axes_by_blocks"
    stage fft 60 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft.json"
    # the complex epilogue at 25 moduli: VEC 1 (the table's, 96 registers) against VEC 2 (166)
    stage kernels_fftn_512 25 python3 -m bench.kernel_times fftn 512 --top 16
    stage kernels_fftn_512_vec2 25 env OZAKI_EPILOGUE_VEC=2 python3 -m bench.kernel_times fftn 512 --top 6
    stage fft_1024 50 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
elif [ "$profile" = s17a ]; then
    gpu_tests gpu_backend 160 tests/backends/test_cupy_backend.py tests/backends/test_prepared_gpu.py \
        tests/backends/test_fused.py
    gpu_tests gpu_fft 120 tests/fft/test_fft_gpu.py
    stage zgemm 60 python3 -m bench.gemm --sizes 4096 8192 --families complex --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/zgemm.json"
    stage zgemm_parts_off 45 env OZAKI_NEW_KERNELS=epilogue_vec,fp8_digits,zero_signs_parts python3 -m bench.gemm \
        --sizes 8192 --families complex --no-emulated --samples 12 --repeats 5 --modes accurate \
        --out "$W/zgemm_parts_off.json"
    stage kernels_fftn_1024 50 python3 -m bench.kernel_times fftn 1024 --top 24 --gaps 4
elif [ "$profile" = s17b ]; then
    export OZAKI_NEW_KERNELS=all        # residue_quarters: off by default until this run
    gpu_tests gpu_fft 80 tests/fft/test_fft_gpu.py -k "butterfly4 or quarter"
    gpu_tests gpu_epilogue 30 tests/backends/test_cupy_backend.py -k "epilogue"
    stage fft 50 python3 -m bench.fft --cubes 256 512 --batches 4096x1024 --sizes --repeats 3 --out "$W/fft.json"
    stage fft_one_product 40 env OZAKI_QUARTER_MIN=1000000000 python3 -m bench.fft --cubes 256 512 \
        --batches 4096x1024 --sizes --repeats 3 --out "$W/fft_one_product.json"
    stage fft_1024 45 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
elif [ "$profile" = s18a ]; then     # most wanted first: a call cut by the device time left keeps what ran
    export OZAKI_NEW_KERNELS=all
    gpu_tests gpu_fft 240 tests/fft/test_fft_gpu.py -v
    gpu_tests gpu_backend 90 tests/backends/test_cupy_backend.py -v -k "epilogue or residues_of_parts or complex"
    stage fft 40 python3 -m bench.fft --cubes 512 --batches 4096x1024 --sizes --repeats 3 --out "$W/fft.json"
    stage fft_1024 45 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
    stage fft_1024_unreduced 45 env OZAKI_EPILOGUE_BYTES=1,0 python3 -m bench.fft --cubes 1024 --sizes \
        --repeats 2 --out "$W/fft_1024_unreduced.json"
    stage fft_one_product 30 env OZAKI_QUARTER_MIN=1000000000 python3 -m bench.fft --cubes --batches 4096x1024 \
        --sizes --repeats 3 --out "$W/fft_one_product.json"
    stage kernels_batch 30 python3 -m bench.kernel_times batch 4096x1024
    stage fft_1024_one_product 45 env OZAKI_QUARTER_MIN=1000000000 python3 -m bench.fft --cubes 1024 --sizes \
        --repeats 2 --out "$W/fft_1024_one_product.json"
elif [ "$profile" = s24a ]; then
    gpu_tests gpu_fft_quarter 130 tests/fft/test_fft_gpu.py -k "quarter or butterfly4"
    batches="4096x1024 8192x1024 16384x1024 4096x2048 8192x2048 32768x512 65536x512 131072x512 65536x256 262144x256"
    one_product_and_quarter_turns 60 OZAKI_GPU_QUARTER_MIN=256 --cubes 256 512 --batches $batches --sizes --repeats 3
    stage gemm 90 python3 -m bench.gemm --sizes 1024 2048 4096 --shapes 4096x64x64x64 256x256x256x256 \
        16x1024x1024x1024 --families normal --no-emulated --samples 8 --modes accurate --out "$W/gemm.json"
    stage fft_table 120 python3 -m bench.fft --cubes 256 512 1024 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 2 --out "$W/fft_table.json"
elif [ "$profile" = s24b ] || [ "$profile" = s24c ] || [ "$profile" = s24d ]; then
    stage fft_quarter_default 40 python3 -m bench.fft --cubes --batches 8192x1024 4096x2048 --sizes --repeats 3 \
        --out "$W/fft_quarter_default.json"
    stage kernels_fft_65536 40 python3 -m bench.kernel_times fft 65536 --gaps 6 --out "$W/kernels_fft_65536.json"
    stage kernels_batch_4096x1024 40 python3 -m bench.kernel_times batch 4096x1024 --gaps 6 \
        --out "$W/kernels_batch_4096x1024.json"
    stage kernels_stack_4096x64 40 python3 -m bench.kernel_times stack 4096x64 --gaps 6 \
        --out "$W/kernels_stack_4096x64.json"
    [ "$profile" = s24d ] || issue11_tables $([ "$profile" = s24c ] && echo nofp8)
elif [ "$profile" = s25b ]; then
    gpu_tests gpu_graphs 170 tests/backends/test_graphs.py tests/fft/test_fft_graphs.py &
    gpu_tests gpu_fft 170 tests/fft/test_fft_gpu.py -k "same_bits_as_cpu or specials or zero_signs" &
    wait
    fft_small="--cubes 64 128 --batches 4096x1024 1024x1024 256x256 --sizes 4096 65536 1048576 --fresh 3 --repeats 5"
    stage fft_graphs 70 python3 -m bench.fft $fft_small --out "$W/fft_graphs.json"
    stage fft_eager 70 env OZAKI_CUDA_GRAPHS=0 python3 -m bench.fft $fft_small --out "$W/fft_eager.json"
    stage gemm_exact 40 python3 -m bench.gemm --sizes 512 1024 --shapes 4096x64x64x64 --families normal --no-emulated \
        --samples 4 --modes exact accurate --out "$W/gemm_exact.json"
    stage fft_graphs_2e24 50 env OZAKI_FFT_GRAPH_POINTS=16777216 python3 -m bench.fft --cubes 256 \
        --batches 16384x1024 --sizes 16777216 --fresh 2 --repeats 3 --out "$W/fft_graphs_2e24.json"
elif [ "$profile" = s25c ]; then   # after run 7f56e13: an fftn's axes a graph each; exact mode eager beside
    gpu_tests gpu_fft_graphs 120 tests/fft/test_fft_graphs.py
    stage fft_graphs 35 python3 -m bench.fft --cubes 64 128 --sizes --repeats 5 --out "$W/fft_graphs.json"
    stage fft_eager 35 env OZAKI_CUDA_GRAPHS=0 python3 -m bench.fft --cubes 64 128 --sizes --repeats 5 \
        --out "$W/fft_eager.json"
    exact_small="--sizes 1024 --shapes 4096x64x64x64 --families normal --no-emulated --samples 4"
    stage gemm_exact 25 python3 -m bench.gemm $exact_small --modes exact --out "$W/gemm_exact.json"
    stage gemm_exact_eager 25 env OZAKI_CUDA_GRAPHS=0 python3 -m bench.gemm $exact_small --modes exact \
        --out "$W/gemm_exact_eager.json"
elif [ "$profile" = s27a ]; then
    gpu_tests gpu_graphs 100 tests/backends/test_graphs.py &
    gpu_tests gpu_stacks 100 tests/backends/test_cupy_backend.py tests/backends/test_fused.py -k "stack" &
    gpu_tests gpu_fft 100 tests/fft/test_fft_gpu.py -k "same_bits_as_cpu" &
    gpu_tests gpu_int_mod 100 tests/backends/test_fused.py -k "int32_limits or two_words" &
    wait
    stage exact_stacks 60 python3 -m bench.graph_probe --exact-stacks 4096x64 256x64 64x128
    # the fused kernel's reduction on the integer pipes (fused_int_mod) against the defaults, in turns
    with_and_without fused_int_mod 40 --sizes 1024 --shapes 4096x64x64x64 1024x128x128x128 --families normal \
        --no-emulated --samples 4 --modes accurate
    stage fft_cubes 60 python3 -m bench.fft --cubes 128 256 --sizes --repeats 3 --out "$W/fft_cubes.json"
    issue11_tables nofp8            # last: what a short device budget cuts
elif [ "$profile" = s29a ]; then
    with_crt_mma=$(new_kernels +crt_mma)
    ( unset OZAKI_NEW_KERNELS; gpu_tests gpu_crt_mma 200 tests/backends/test_fused.py -k "crt_on_tensor_cores" ) &
    gpu_tests gpu_graphs 150 tests/backends/test_graphs.py &
    OZAKI_NEW_KERNELS=all gpu_tests gpu_limits 150 tests/backends/test_fused.py -k "int32_limits or two_words" &
    wait
    # the CRT on the tensor cores against the defaults, in turns, on "auto" and on the fused path (256 x 256^2:
    # whether the fused kernel now wins it, FUSED_AUTO_SIDE)
    with_and_without crt_mma 40 --sizes 1024 --shapes 4096x64x64x64 1024x128x128x128 256x256x256x256 --families normal \
        --no-emulated --samples 4 --modes accurate --paths auto fused
    stage sweep_short 70 env OZAKI_NEW_KERNELS="$with_crt_mma" python3 -m bench.crossover --sweep --max-work 2.2e9 \
        --cases stack --out "$W/sweep_short.json"
    OZAKI_NEW_KERNELS=$with_crt_mma ncu_calls "stack 4096x64"
elif [ "$profile" = s29b ] || [ "$profile" = s29c ]; then
    with_crt_mma=$(new_kernels +crt_mma)
    ( unset OZAKI_NEW_KERNELS; gpu_tests gpu_crt_mma 200 tests/backends/test_fused.py -k "crt_on_tensor_cores" ) &
    OZAKI_NEW_KERNELS=$with_crt_mma gpu_tests gpu_fused_crt_mma 200 tests/backends/test_fused.py \
        tests/backends/test_cupy_float32.py -k "not crt_on_tensor_cores" &
    wait
    passed=1
    for f in gpu_crt_mma gpu_fused_crt_mma; do
        grep -q 'failures="0"' "$W/$f.xml" 2>/dev/null && grep -q 'errors="0"' "$W/$f.xml" || passed=0
    done
    if [ $passed = 1 ] && [ "$profile" = s29b ]; then
        # the FFT's batches as six-step on the fused kernel with crt_mma (its k = 32 products) against
        # the default (direct) plan; session 9 found six-step slower there, before graphs and crt_mma
        stage fft_direct 40 python3 -m bench.fft --batches 4096x512 4096x1024 --sizes --repeats 5 \
            --out "$W/fft_direct.json"
        stage fft_six_step_fused 40 env OZAKI_NEW_KERNELS="$with_crt_mma" python3 -m bench.fft --batches 4096x512 \
            4096x1024 --sizes --repeats 5 --epilogue 300 --path fused --out "$W/fft_six_step_fused.json"
        OZAKI_NEW_KERNELS=$with_crt_mma issue11_tables nofp8
    fi
elif [ "$profile" = s30a ]; then
    with_crt_mma=$(new_kernels +crt_mma)
    ( unset OZAKI_NEW_KERNELS; gpu_tests gpu_crt_mma 200 tests/backends/test_fused.py -k "crt_on_tensor_cores" ) &
    OZAKI_NEW_KERNELS=$with_crt_mma gpu_tests gpu_fused_crt_mma 200 tests/backends/test_fused.py \
        tests/backends/test_cupy_float32.py -k "not crt_on_tensor_cores" &
    gpu_tests gpu_graphs 150 tests/backends/test_graphs.py &
    wait
    passed=1
    for f in gpu_crt_mma gpu_fused_crt_mma; do
        grep -q 'failures="0"' "$W/$f.xml" 2>/dev/null && grep -q 'errors="0"' "$W/$f.xml" || passed=0
    done
    if [ $passed = 1 ]; then
        export OZAKI_NEW_KERNELS=$with_crt_mma
        stage sweep_short 70 python3 -m bench.crossover --sweep --max-work 2.2e9 --cases stack --out "$W/sweep_short.json"
        for turn in 1 2; do     # the graphs' replays over the caller's own inputs (no copy in) against the copy
            grep -q OZAKI_GRAPH_DIRECT_INPUTS ozaki/backends/graphs.py || break
            for direct in 0 1; do
                stage "gemm_direct${direct}_$turn" 35 env OZAKI_GRAPH_DIRECT_INPUTS=$direct python3 -m bench.gemm \
                    --sizes 1024 --shapes 4096x64x64x64 1024x128x128x128 --families normal --no-emulated \
                    --samples 4 --modes accurate --out "$W/gemm_direct${direct}_$turn.json"
            done
        done
        # the FFT's batches as six-step on the fused kernel with crt_mma (its k = 32 products) against the
        # default (direct) plan (session 9 found six-step slower there, before graphs and crt_mma)
        stage fft_direct 40 python3 -m bench.fft --batches 4096x512 4096x1024 --sizes --repeats 5 \
            --out "$W/fft_direct.json"
        stage fft_six_step_fused 40 python3 -m bench.fft --batches 4096x512 4096x1024 --sizes --repeats 5 \
            --epilogue 300 --path fused --out "$W/fft_six_step_fused.json"
    fi
elif [ "$profile" = s32b ]; then     # after s32a passes: the residue GEMM at the big squares, tile walks
    for tile in 256x128-swizzle8 256x128-cluster2 256x128-cluster2-swizzle8; do      # the same bits at each
        OZAKI_RESIDUE_GEMM_TILE=$tile gpu_tests "gpu_residue_$tile" 150 tests/backends/test_residue_gemm.py &
    done
    wait
    on=$(new_kernels +epilogue_mma)
    big="--sizes 8192 16384 --families normal --no-emulated --samples 2 --modes accurate:14 accurate"
    stage gemm_big_cublas 100 python3 -m bench.gemm $big --paths cublas --out "$W/gemm_big_cublas.json"
    for tile in 256x128 256x128-swizzle8 256x128-cluster2-swizzle8; do
        stage "gemm_big_$tile" 100 env OZAKI_NEW_KERNELS="$on" OZAKI_RESIDUE_GEMM_TILE=$tile python3 -m bench.gemm \
            $big --paths cutlass --out "$W/gemm_big_$tile.json"
    done
    # ZGEMM 8192 (issue 11's 1.8x): the complex epilogue_mma on the residue GEMM's int8 residues
    zbig="--sizes 8192 --families complex --no-emulated --samples 2 --modes accurate accurate:15"
    stage zgemm_big_cublas 40 python3 -m bench.gemm $zbig --paths cublas --out "$W/zgemm_big_cublas.json"
    for tile in 256x128 256x128-swizzle8; do
        stage "zgemm_big_$tile" 40 env OZAKI_NEW_KERNELS="$on" OZAKI_RESIDUE_GEMM_TILE=$tile python3 -m bench.gemm \
            $zbig --paths cutlass --out "$W/zgemm_big_$tile.json"
    done
    long=$(python3 -c "from ozaki.backends.kernel_tables import FUSED_TILES as t; print(','.join(map(str, t['long'][0])))")
    for turn in 1 2; do        # the short tile at 3 stages (s30a's sweep: 2-3% on the kernel alone) on the whole call
        for stages in 4 3; do
            stage "gemm_stages${stages}_$turn" 30 env OZAKI_FUSED_TILES="32,32,2,2,64,$stages;$long" python3 -m bench.gemm \
                --sizes --shapes 4096x64x64x64 1024x128x128x128 --families normal --no-emulated --samples 4 \
                --modes accurate --out "$W/gemm_stages${stages}_$turn.json"
        done
    done
    stage graph_inputs 45 python3 -m bench.graph_inputs --shapes 1x1024x1024x1024 4096x64x64x64 --turns 2 \
        --profile 200 --out "$W/graph_inputs.json"
elif [ "$profile" = s32a ]; then     # session 31's kernels, none run yet (its device calls got no machine)
    gpu_tests gpu_epilogue_mma 170 tests/backends/test_epilogue_mma.py &
    gpu_tests gpu_crt_shared 170 tests/backends/test_fused.py tests/backends/test_cupy_backend.py \
        -k "crt_on_tensor_cores or epilogue or tiled_transposes" &
    gpu_tests gpu_graphs 150 tests/backends/test_graphs.py &
    # the rounding by conversion under the tests that check each output against Fractions
    OZAKI_NEW_KERNELS=$(new_kernels +round_convert) gpu_tests gpu_round_convert 170 tests/backends/test_epilogue_mma.py \
        tests/backends/test_fused.py tests/backends/test_cupy_backend.py -k "exact_integers or crt_on_tensor_cores \
        or epilogue_kernel or residuals or subnormal" &
    wait
    with_and_without epilogue_mma 50 --sizes 1024 2048 4096 --shapes 256x256x256x256 16x1024x1024x1024 \
        --families normal complex --no-emulated --samples 4 --modes accurate
    with_and_without tiled_bt 30 --sizes --shapes 4096x64x64x64 1024x128x128x128 256x256x256x256 \
        --families normal --no-emulated --samples 4 --modes accurate
    with_and_without round_convert 30 --sizes 2048 --shapes 4096x64x64x64 256x256x256x256 \
        --families normal --no-emulated --samples 4 --modes accurate
    off=$(new_kernels -epilogue_mma) on=$(new_kernels +epilogue_mma)
    for turn in 1 2; do
        for x in off on; do
            stage "fft_${x}_$turn" 40 env OZAKI_NEW_KERNELS="${!x}" python3 -m bench.fft --cubes 256 \
                --batches 4096x1024 --sizes 1048576 --repeats 5 --out "$W/fft_${x}_$turn.json"
        done
    done
elif [ "$profile" = s30b ]; then     # issue 11's tables without fp8 and issue 16's, at the current defaults
    issue11_tables nofp8
    stage fft_table 100 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft_table.json"
elif [ "$profile" = s26e ]; then
    gpu_tests gpu_graphs 150 tests/backends/test_graphs.py &
    gpu_tests gpu_two_words 150 tests/backends/test_fused.py tests/backends/test_cupy_backend.py -k "two_words \
        or epilogue or same_bits_normal or stack_same_bits" &
    wait
    # why exact-mode stacks ran slower through graphs (run b73e858): their captures' failures, if any
    stage exact_stacks 60 python3 -m bench.graph_probe --exact-stacks 4096x64 256x64
    small="--sizes 1024 2048 4096 --shapes 4096x64x64x64 256x256x256x256 --families normal --no-emulated --samples 4 \
        --modes accurate"
    without_two_words=$(new_kernels -two_words)
    for turn in 1 2; do
        # main's code, from prev/ (python -m puts the working folder first on the path: prev's ozaki, this bench)
        [ -d prev/ozaki ] && stage "gemm_prev_$turn" 40 bash -c "cd prev && PYTHONPATH=$PWD:$PYTHONPATH python3 -m \
            bench.gemm $small --out $W/gemm_prev_$turn.json"
        stage "gemm_new_$turn" 40 python3 -m bench.gemm $small --out "$W/gemm_new_$turn.json"
        stage "gemm_new_limbs_$turn" 40 env OZAKI_NEW_KERNELS="$without_two_words" python3 -m bench.gemm $small \
            --out "$W/gemm_new_limbs_$turn.json"
    done
elif [ "$profile" = s26d ]; then
    issue11_tables nofp8
elif [ "$profile" = s26c ]; then
    gpu_tests gpu_fused 150 tests/backends/test_fused.py tests/backends/test_cupy_float32.py -k "same_bits \
        or moduli_counts or complex_paths or stacks or subnormal or auto_path or int32_limits" &
    gpu_tests gpu_fft 150 tests/fft/test_fft_gpu.py -k "same_bits_as_cpu" &
    gpu_tests gpu_rest 150 tests/backends/test_cupy_backend.py tests/backends/test_graphs.py -k "residual \
        or exact_entries or certified or fp8 or large_products or replays_on" &
    wait
    cap="--sizes 2048 --shapes 16x1024x1024x1024 256x256x256x256 --families normal --no-emulated --samples 4 \
        --modes accurate"
    stage gemm_cap33 30 python3 -m bench.gemm $cap --out "$W/gemm_cap33.json"
    stage gemm_cap34 30 env OZAKI_GRAPH_MAX_WORK=17179869184 python3 -m bench.gemm $cap --out "$W/gemm_cap34.json"
    stage gemm_eager 30 env OZAKI_CUDA_GRAPHS=0 python3 -m bench.gemm $cap --out "$W/gemm_eager.json"
    stage fft_small 60 python3 -m bench.fft --cubes 128 --batches 4096x1024 --sizes 65536 1048576 --fresh 3 \
        --repeats 5 --out "$W/fft_small.json"
elif [ "$profile" = s26b ]; then
    gpu_tests gpu_scan 150 tests/backends/test_cupy_backend.py tests/backends/test_graphs.py -k "scan_rows or row_bits \
        or stack or fixups" &
    gpu_tests gpu_rounding 150 tests/backends/test_cupy_backend.py tests/backends/test_cupy_float32.py \
        tests/backends/test_fused.py -k "same_bits or residual or subnormal or moduli_counts or complex_paths" &
    wait
    small="--sizes 1024 2048 --shapes 4096x64x64x64 256x256x256x256 16x1024x1024x1024 --families normal --no-emulated \
        --samples 4 --modes accurate"
    stage gemm_small 60 python3 -m bench.gemm $small --out "$W/gemm_small.json"
    stage gemm_small_eager 60 env OZAKI_CUDA_GRAPHS=0 python3 -m bench.gemm $small --out "$W/gemm_small_eager.json"
    ncu_calls "stack 4096x64"
elif [ "$profile" = s26a ]; then
    issue11_tables nofp8
    exact_small="--sizes 1024 --shapes 4096x64x64x64 --families normal --no-emulated --samples 4"
    stage gemm_exact 30 python3 -m bench.gemm $exact_small --modes exact --out "$W/gemm_exact.json"
    stage gemm_exact_eager 25 env OZAKI_CUDA_GRAPHS=0 python3 -m bench.gemm $exact_small --modes exact \
        --out "$W/gemm_exact_eager.json"
    ncu_calls "stack 4096x64" "batch 4096x1024"
elif [ "$profile" = s25a ]; then
    ncu_calls
    issue11_tables nofp8
elif [ "$profile" = s22b ]; then
    issue11_tables
elif [ "$profile" = s22e ]; then
    gpu_tests gpu_graphs 90 tests/backends/test_graphs.py -k call_setting &
    for tile in 128x256 128x128-pingpong; do
        ( export OZAKI_RESIDUE_GEMM_TILE=$tile; gpu_tests "gpu_residue_gemm_$tile" 90 tests/backends/test_residue_gemm.py ) &
    done
    wait
elif [ "$profile" = s22d ]; then
    gpu_tests gpu_backend_rest 120 tests/backends/test_cupy_backend.py tests/backends/test_graphs.py -k "exact_by_test \
        or epilogue_residuals or exact_entries or certified_recomputes or row_bits or contiguous_and_assign \
        or residues_of_parts or call_setting" &
    gpu_tests gpu_fft_quarter 120 tests/fft/test_fft_gpu.py -k "quarter or butterfly4" &
    for tile in 128x256 128x128-pingpong; do
        ( export OZAKI_RESIDUE_GEMM_TILE=$tile; gpu_tests "gpu_residue_gemm_$tile" 90 tests/backends/test_residue_gemm.py ) &
    done
    wait
    stage residue_tiles 100 python3 -m bench.residue_tiles --out "$W/residue_tiles.json"
elif [ "$profile" = s22a ] || [ "$profile" = s22c ]; then
    gpu_tests gpu_backend_rest 130 tests/backends/test_cupy_backend.py tests/backends/test_graphs.py -k "exact_by_test \
        or epilogue_residuals or exact_entries or certified_recomputes or row_bits or contiguous_and_assign \
        or residues_of_parts or call_setting" &
    gpu_tests gpu_fft_quarter 130 tests/fft/test_fft_gpu.py -k "quarter or butterfly4" &
    for tile in 128x256 128x128-pingpong; do
        ( export OZAKI_RESIDUE_GEMM_TILE=$tile; gpu_tests "gpu_residue_gemm_$tile" 60 tests/backends/test_residue_gemm.py )
    done &
    wait
    stage residue_tiles 130 python3 -m bench.residue_tiles --cubes 1024 --out "$W/residue_tiles.json"
    batches="16384x1024 32768x1024 65536x1024 16384x2048 32768x2048"
    one_product_and_quarter_turns 30 "" --cubes --batches $batches --sizes --repeats 3
    if [ "$profile" = s22c ]; then
        stage gemm 70 python3 -m bench.gemm --sizes 8192 16384 --families normal --no-emulated \
            --samples 8 --modes accurate accurate:14 --out "$W/gemm.json"
        stage zgemm 40 python3 -m bench.gemm --sizes 8192 --families complex --no-emulated --samples 8 \
            --modes accurate accurate:14 --out "$W/zgemm.json"
    fi
    stage fft_table 90 python3 -m bench.fft --cubes 256 512 1024 --batches 4096x1024 \
        --sizes 65536 1048576 --repeats 2 --out "$W/fft_table.json"
elif [ "$profile" = s21e ]; then
    # what run da86e14 (s21c) left, in the 410 s of device time left (about 300 s): the
    # backend's last GPU tests (exact_by_test, the residual epilogue, fractions, certified,
    # row_bits: not reached in s20c either) and the FFT's quarter-turn ones (the threshold now in
    # points); the quarter turns against one product from 2**24 to 2**26 points; issue 16's
    # table at the defaults (the residue GEMM's tiles on fftn 1024^3 left for later)
    gpu_tests gpu_backend_rest 120 tests/backends/test_cupy_backend.py -k "exact_by_test or epilogue_residuals \
        or exact_entries or certified_recomputes or row_bits or contiguous_and_assign or residues_of_parts" &
    gpu_tests gpu_fft_quarter 120 tests/fft/test_fft_gpu.py -k "quarter or butterfly4" &
    wait
    batches="16384x1024 32768x1024 65536x1024 16384x2048 32768x2048"
    one_product_and_quarter_turns 30 "" --cubes --batches $batches --sizes --repeats 3
    stage fft_table 90 python3 -m bench.fft --cubes 256 512 1024 --batches 4096x1024 \
        --sizes 65536 1048576 --repeats 2 --out "$W/fft_table.json"
elif [ "$profile" = s20c ]; then
    # the budget left (about 240 s): the GPU tests of the changes, then fftn 1024^3 and a long
    # batch with the residue GEMM's integer reduction and with its float64 one
    gpu_tests gpu_backend 130 tests/backends/test_cupy_backend.py -k "epilogue or same_bits" &
    gpu_tests gpu_fft 130 tests/fft/test_fft_gpu.py -k "same_bits or quarter" &
    gpu_tests gpu_residue 130 tests/backends/test_residue_gemm.py tests/backends/test_fused.py -k "residue" &
    wait
    stage fft_1024 35 python3 -m bench.fft --cubes 1024 --batches 65536x1024 --sizes --repeats 2 --out "$W/fft_1024.json"
    stage fft_fp64mod 35 env OZAKI_NEW_KERNELS=$(new_kernels -residue_int_mod) python3 -m bench.fft --cubes 1024 --batches 65536x1024 --sizes \
        --repeats 2 --out "$W/fft_fp64mod.json"
    stage fft_table 30 python3 -m bench.fft --cubes 256 512 --batches 4096x1024 --sizes 65536 1048576 --repeats 2 \
        --out "$W/fft_table.json"
elif [ "$profile" = s20a ]; then
    gpu_tests gpu_quarter 150 tests/backends/test_cupy_backend.py tests/fft/test_fft_gpu.py \
        -k "interleaved_into_views or quarter_turns or butterfly4 or epilogue_kernel"
    for nk in all default; do
        [ $nk = all ] && export OZAKI_NEW_KERNELS=all || unset OZAKI_NEW_KERNELS
        stage "kernels_fftn_1024_$nk" 60 python3 -m bench.kernel_times fftn 1024 --top 12
        stage "fft_rows_$nk" 60 python3 -m bench.fft --cubes --batches 4096x1024 16384x1024 65536x1024 2048x2048 \
            --sizes --repeats 3 --out "$W/fft_rows_$nk.json"
    done
    unset OZAKI_NEW_KERNELS
    # the epilogue's instructions (issue-bound since the launch bounds: 31 of the H100's 33.5 T a
    # second in run 8b1f31d): complex, 25 moduli, ptxas 13.0: 1,864 an output now; the
    # differences unreduced (BYTE_REDUCE 0) 1,624; two outputs a thread as well at 3 blocks
    # (152 registers) 1,356, lead 256 (bench.sass)
    for arm in "now:" "unreduced:OZAKI_EPILOGUE_BYTES=1,0" \
               "vec2:OZAKI_EPILOGUE_BYTES=1,0 OZAKI_EPILOGUE_VEC=2 OZAKI_EPILOGUE_BLOCKS=3"; do
        stage "fft_epilogue_${arm%%:*}" 50 env ${arm#*:} python3 -m bench.fft --cubes 1024 --batches 4096x1024 \
            --sizes --repeats 2 --out "$W/fft_epilogue_${arm%%:*}.json"
    done
elif [ "$profile" = s19b ]; then
    gpu_tests gpu_backend 150 tests/backends/test_cupy_backend.py -k "epilogue or residues_of_parts or same_bits" &
    gpu_tests gpu_fft 150 tests/fft/test_fft_gpu.py -k "same_bits" &
    wait
    stage fft_1024 50 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
    stage fft_table 100 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft_table.json"
    stage fft_blocks0 30 env OZAKI_EPILOGUE_BLOCKS=0 python3 -m bench.fft --cubes 512 --batches 4096x1024 --sizes \
        --repeats 3 --out "$W/fft_blocks0.json"
    stage kernels_batch 25 python3 -m bench.kernel_times batch 4096x1024 --top 12 --gaps 8 --cprofile 20
elif [ "$profile" = s19a ]; then
    export OZAKI_NEW_KERNELS=all
    export OZAKI_EPILOGUE_BLOCKS=0     # its baseline as at 3d22402 (the bounds' stages set 4 or 5 themselves)
    gpu_tests gpu_tests 150 tests/fft/test_fft_gpu.py tests/backends/test_cupy_backend.py -v \
        -k "residues_of_parts_kernel or butterfly4 or quarter_turns or times_kernels or row_specials_kernel"
    shapes="--cubes 512 --batches 4096x1024 2048x2048 --sizes --repeats 3"
    stage fft 40 python3 -m bench.fft $shapes --out "$W/fft.json"
    stage fft_blocks4 40 env OZAKI_EPILOGUE_BLOCKS=4 python3 -m bench.fft $shapes --out "$W/fft_blocks4.json"
    stage fft_one_product 40 env OZAKI_QUARTER_MIN=1000000000 python3 -m bench.fft $shapes --out "$W/fft_one_product.json"
    stage fft_1024 45 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 --out "$W/fft_1024.json"
    stage fft_1024_blocks4 45 env OZAKI_EPILOGUE_BLOCKS=4 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 \
        --out "$W/fft_1024_blocks4.json"
    stage fft_1024_blocks5 45 env OZAKI_EPILOGUE_BLOCKS=5 python3 -m bench.fft --cubes 1024 --sizes --repeats 2 \
        --out "$W/fft_1024_blocks5.json"
    # (the stack of 64^3 products runs the fused kernel on "auto", which EPILOGUE_BLOCKS leaves alone)
    small="--sizes 2048 --shapes 4096x64x64x64 256x256x256x256 --families normal --no-emulated --samples 6 --repeats 5 --paths auto cutlass"
    stage gemm_small 40 python3 -m bench.gemm $small --modes accurate accurate:14 --out "$W/gemm_small.json"
    stage gemm_small_blocks4 40 env OZAKI_EPILOGUE_BLOCKS=4 python3 -m bench.gemm $small --modes accurate accurate:14 \
        --out "$W/gemm_small_blocks4.json"
    # the 2048-point batch on the plan it had before ed0c56a (six-step), for the GPU's default (one product)
    stage fft_2048_six_step 30 python3 -c "import sys, runpy; from ozaki.fft import plans; plans.QUARTER_DIRECT_MAX = 1024
sys.argv = ['bench.fft', '--cubes', '--batches', '2048x2048', '--sizes', '--repeats', '3', '--out', '$W/fft_2048_six_step.json']
runpy.run_module('bench.fft', run_name='__main__')"
elif [ "$profile" = s13b ]; then
    stage gemm 170 python3 -m bench.gemm --sizes 1024 2048 4096 8192 16384 --families normal --no-emulated \
        --samples 12 --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/gemm.json"
    stage gemm_shapes 120 python3 -m bench.gemm --sizes --shapes 4096x64x64x64 256x256x256x256 16x1024x1024x1024 \
        1x16384x256x16384 1x16384x16384x64 --families normal --no-emulated --samples 12 --repeats 5 \
        --modes accurate accurate:15 accurate:14 --out "$W/gemm_shapes.json"
    stage zgemm 100 python3 -m bench.gemm --sizes 2048 4096 8192 --families complex --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/zgemm.json"
    stage gemm_fp8 90 python3 -m bench.gemm --sizes 8192 16384 --families normal --no-emulated --samples 12 \
        --repeats 3 --modes accurate --substrates int8 fp8 --out "$W/gemm_fp8.json"
    stage kernels_16384 45 python3 -m bench.kernel_times matmul 16384 --mode accurate:14 --top 10
fi
if [ "$profile" = s11b ] || [ "$profile" = s11a ] || [ "$profile" = s12a ] || [ "$profile" = s13a ]; then    # three groups at once: mostly compiling (CPU)
    limit=$([ "$profile" = s11a ] && echo 170 || echo 520)
    [ "$profile" = s12a ] || [ "$profile" = s13a ] && limit=$(( 570 - SECONDS > 60 ? 570 - SECONDS : 60 ))
    gpu_tests gpu_backend $limit tests/backends/test_cupy_backend.py tests/backends/test_cupy_float32.py \
        tests/backends/test_graphs.py tests/backends/test_prepared_gpu.py tests/backends/test_residue_gemm.py &
    gpu_tests gpu_fused $limit tests/backends/test_fused.py &
    gpu_tests gpu_rest $limit tests/fft tests/linalg tests/test_dask.py tests/test_api.py tests/test_float32.py \
        tests/test_certified.py tests/test_exact_by_test.py tests/test_complex.py tests/test_prepared.py \
        tests/gemm tests/crt tests/reference &
    wait
fi
case " fused diag close moduli14 s9b s10a s11a s11b s12a s13a s13b s13c s14a s14b s14c s14d s15a s15b s15c s16a s16b s16c s16d s17a s17b s18a s19a s19b s20a " in *" $profile "*) handled=1 ;; *) handled=0 ;; esac
if [ $handled = 1 ]; then    # run by the chains above
    :
elif [ "$profile" = s10c ]; then
    stage zgemm 120 python3 -m bench.gemm --sizes 2048 4096 8192 --families complex --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/zgemm.json"
    stage kernels_z8192_accurate_15 45 python3 -m bench.kernel_times zmatmul 8192 --mode accurate:15 --top 12
    gpu_tests gpu_backend 200 tests/backends/test_cupy_backend.py tests/backends/test_cupy_float32.py \
        tests/test_certified.py tests/test_exact_by_test.py tests/backends/test_fused.py -k "not crossover"
    gpu_tests gpu_rest 150 tests/fft/test_fft_gpu.py tests/test_dask.py tests/test_api.py tests/test_float32.py \
        -k "same_bits or dask or gpu or cupy or float32 or complex"
elif [ "$profile" = s10b ]; then
    gpu_tests gpu_changed 150 tests/backends/test_cupy_backend.py tests/backends/test_fused.py \
        -k "residues or complex or stacks_and_broadcast or same_bits_adversarial"
    stage residue_pass 90 python3 -m bench.residue_pass --n 16384 --moduli 12 14 15 16 20 --unroll -1 0 1 2 \
        --out "$W/residue_pass.json"
    stage zgemm 100 python3 -m bench.gemm --sizes 8192 --families complex --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/zgemm.json"
    stage kernels_z8192_accurate_14 45 python3 -m bench.kernel_times zmatmul 8192 --mode accurate:14 --top 14
    stage kernels_16384_accurate_14 45 python3 -m bench.kernel_times matmul 16384 --mode accurate:14 --top 8
    stage gemm 150 python3 -m bench.gemm --sizes 8192 16384 --families normal --no-emulated --samples 12 \
        --repeats 5 --modes accurate accurate:15 accurate:14 --out "$W/gemm.json"
    gpu_tests gpu_fft 100 tests/fft/test_fft_gpu.py -k "same_bits"
elif [ "$profile" = s9e ]; then
    gpu_tests gpu_residues 80 tests/backends/test_cupy_backend.py -k "residues_kernel or same_bits_adversarial"
    for md in accurate accurate:22; do
        stage "kernels_16384_${md/:/_}" 45 python3 -m bench.kernel_times matmul 16384 --mode $md --top 4
    done
elif [ "$profile" = s9d ]; then
    for md in 16 22; do
        stage "ncu_residues_$md" 60 ncu --clock-control none -k regex:^residues --launch-skip 2 --launch-count 2 \
            --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis --section WarpStateStats \
            --section MemoryWorkloadAnalysis --section InstructionStats \
            python3 -c "import cupy, numpy as np, ozaki; rng = np.random.default_rng(5)
A, B = (cupy.asarray(rng.standard_normal((8192, 8192))) for _ in range(2))
[ozaki.matmul(A, B, mode='accurate', num_moduli=$md) for _ in range(3)]; cupy.cuda.Device().synchronize()"
    done
    stage gemm 150 python3 -m bench.gemm --sizes 4096 8192 16384 --families normal --no-emulated \
        --samples 24 --repeats 5 --modes accurate accurate:14 fast:15 --out "$W/gemm.json"
    stage certified 200 python3 -m bench.certified --n 16384 --families normal phi3 --moduli 22 \
        --repeats 3 --out "$W/certified.json"
    for e in 1500 300; do      # the plans' epilogue weight: batches of 512 and 1024 points direct, or six-step
        stage "fft_e$e" 60 python3 -m bench.fft --cubes --sizes --batches 4096x512 4096x1024 --repeats 3 \
            --epilogue $e --out "$W/fft_e$e.json"
    done
    gpu_tests gpu_fft 150 tests/fft/test_fft_gpu.py -k "same_bits or times"
elif [ "$profile" = s9c ]; then
    for md in native accurate exact; do
        stage "kernels_16384_$md" 70 python3 -m bench.kernel_times matmul 16384 --mode $md --top 12 --gaps 4 --clocks \
            --cprofile 2
    done
elif [ "$profile" = next8 ] || [ "$profile" = s9a ]; then  # branch gpu-next: narrow and wide residue kernels
    for md in accurate accurate:21 accurate:22; do
        stage "kernels_16384_${md/:/_}" 60 python3 -m bench.kernel_times matmul 16384 --mode $md --top 4
    done
    stage kernels_stack_4096x64 40 python3 -m bench.kernel_times stack 4096x64 --top 4
    gpu_tests gpu_residues 240 tests/backends/test_cupy_backend.py tests/test_certified.py &
    gpu_tests gpu_fused 240 tests/backends/test_fused.py &
    gpu_tests gpu_fft 240 tests/fft/test_fft_gpu.py -k "same_bits" &
    wait
    if [ "$profile" = s9a ]; then
        for path in auto fused; do
            stage "fft_$path" 100 python3 -m bench.fft --cubes 256 --batches 4096x1024 --sizes 65536 --repeats 3 \
                --path $path --out "$W/fft_$path.json"
        done
    fi
elif [ "$profile" = ziv ]; then
    stage gpu_ziv 170 python3 -m pytest -q -x --durations=6 -m gpu tests/backends/test_cupy_backend.py \
        tests/backends/test_graphs.py -k "residual or uncertified or exact or certif or graphs or replay" \
        -p no:cacheprovider --junitxml="$W/gpu_ziv.xml"
    stage certified 230 python3 -m bench.certified --n 16384 --families normal phi1 phi3 phi6 --moduli 22 \
        --repeats 2 --out "$W/certified.json"
    stage certified_4k 30 python3 -m bench.certified --n 4096 --families normal phi3 --moduli 21 --repeats 3 \
        --out "$W/certified_4k.json"
elif [ "$profile" = replays ]; then
    stage gpu_replays 200 python3 -m pytest -q --durations=8 -m gpu tests/backends/test_graphs.py \
        tests/fft/test_fft_gpu.py -p no:cacheprovider --junitxml="$W/gpu_replays.xml"
    stage graph_probe 80 python3 -m bench.graph_probe --profile 200 --out "$W/graph_probe.json"
    stage crossover 60 python3 -m bench.crossover --max-work 2147483648 --out "$W/crossover.json"
    stage fft 90 python3 -m bench.fft --cubes 256 --batches 4096x1024 --sizes 65536 1048576 --repeats 3 \
        --out "$W/fft.json"
    stage kernels_1d 30 python3 -m bench.kernel_times fft 65536 --cprofile 3 --out "$W/kernels_1d.json"
elif [ "$profile" = probe ]; then    # host against GPU time, small to large; certified's time split
    stage gpu_certify 120 python3 -m pytest -q --durations=5 -m gpu tests/backends/test_cupy_backend.py \
        tests/test_certified.py -k "scan_rows or certif or exact_entries" -p no:cacheprovider \
        --junitxml="$W/gpu_certify.xml"
    stage graph_probe 90 python3 -m bench.graph_probe
    for c in "stack 4096x64" "stack 256x256" "matmul 512" "matmul 1024" "matmul 4096" "matmul 8192" \
             "matmul 16384" "fft 65536" "fft 1048576" "batch 4096x1024" "fftn 256"; do
        set -- $c
        stage "kernels_$1_$2" 90 python3 -m bench.kernel_times $1 $2 --top 22 --cprofile 3
    done
    stage certified_profile 60 env CUDA_LAUNCH_BLOCKING=1 python3 -m bench.certified --profile
    stage certified 200 python3 -m bench.certified --n 16384 --families normal phi1 phi3 phi6 --moduli 21 22 \
        --repeats 3 --out "$W/certified.json"
elif [ "$profile" = certify ]; then  # certified mode's kernels: tests first, then its time at 16384
    stage gpu_certify 150 python3 -m pytest -q --durations=5 -m gpu tests/backends/test_cupy_backend.py \
        tests/backends/test_cupy_float32.py -k "certif or exact_entries" -p no:cacheprovider \
        --junitxml="$W/gpu_certify.xml"
    stage gpu_backends 240 python3 -m pytest -q --durations=5 -m gpu tests/backends/test_cupy_backend.py \
        tests/backends/test_cupy_float32.py tests/test_api.py -k "not certif and not exact_entries" \
        -p no:cacheprovider --junitxml="$W/gpu_backends.xml" &
    stage certified 240 python3 -m bench.certified --n 16384 --families normal phi1 phi3 phi6 --moduli 20 21 22 \
        --repeats 3 --out "$W/certified.json"
    wait
elif [ "$profile" = mends ]; then     # the changes after bdcaf40, then every GPU test
    stage gpu_mends 150 python3 -m pytest -q --durations=6 -m gpu tests/linalg/test_gpu.py tests/fft/test_fft_gpu.py \
        -p no:cacheprovider --junitxml="$W/gpu_mends.xml"
    stage gpu_backends 220 python3 -m pytest -q --durations=6 -m gpu tests/backends tests/test_api.py tests/gemm \
        -p no:cacheprovider --junitxml="$W/gpu_backends.xml"
    stage gpu_rest 200 python3 -m pytest -q --durations=6 -m gpu tests --ignore=tests/backends --ignore=tests/gemm \
        --ignore=tests/linalg --ignore=tests/fft/test_fft_gpu.py --ignore=tests/test_api.py \
        -p no:cacheprovider --junitxml="$W/gpu_rest.xml"
elif [ "$profile" = residue ]; then   # the residue GEMM as auto takes it
    stage native 60 python3 -c "from ozaki.backends import cupy_backend as b; print('residue GEMM:', b.residue_gemm_available())"
    # correctness first, three test processes side by side (mostly CPU references; 16 cores)
    stage gpu_unit 200 python3 -m pytest -q --durations=6 -m gpu tests/backends/test_residue_gemm.py \
        tests/backends/test_cupy_backend.py -k "residue or epilogue or planes or int32_limit or refuses" \
        -p no:cacheprovider --junitxml="$W/gpu_unit.xml" &
    stage gpu_paths 200 python3 -m pytest -q --durations=6 -m gpu tests/backends/test_fused.py \
        -p no:cacheprovider --junitxml="$W/gpu_paths.xml" &
    stage gpu_fft 200 python3 -m pytest -q --durations=6 -m gpu tests/fft/test_fft_gpu.py -k "same_bits" \
        -p no:cacheprovider --junitxml="$W/gpu_fft.xml" &
    wait
    stage residue_gemm 40 python3 -m bench.residue_gemm --out "$W/residue_gemm.json"
    stage fft 90 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft.json"
    stage kernels_fftn 20 python3 -m bench.kernel_times fftn 256 --out "$W/kernels_fftn.json"
    stage gemm 30 python3 -m bench.gemm --sizes 4096 8192 --families normal --no-emulated --samples 4 \
        --repeats 3 --paths auto cublas --modes accurate --out "$W/gemm.json"
elif [ "$profile" = cutlass ]; then   # the residue GEMM: tests, the step alone, the FFT and GEMM on it
    stage native 120 python3 -c "from ozaki.backends import cupy_backend as b; print('residue GEMM:', b.residue_gemm_available())"
    stage gpu_residue 60 python3 -m pytest -q -x -m gpu tests/backends/test_residue_gemm.py \
        -p no:cacheprovider --junitxml="$W/gpu_residue.xml"
    if ! grep -q " passed" "$W/gpu_residue.txt" || grep -qE "failed|error" "$W/gpu_residue.txt"; then
        echo "residue GEMM tests did not pass: the rest skipped" >> "$W/stages.txt"
        stage gpu_paths_cublas 100 python3 -m pytest -q -m gpu tests/backends/test_fused.py -k "cublas" -p no:cacheprovider
    else
    stage gpu_paths 110 python3 -m pytest -q --durations=6 -m gpu tests/backends/test_fused.py \
        -k "cutlass or auto_path or int32_limit" -p no:cacheprovider --junitxml="$W/gpu_paths.xml"
    stage residue_gemm 70 python3 -m bench.residue_gemm --out "$W/residue_gemm.json"
    stage gpu_fft 90 python3 -m pytest -q --durations=6 -m gpu tests/fft/test_fft_gpu.py -k "same_bits" \
        -p no:cacheprovider --junitxml="$W/gpu_fft.xml"
    stage fft 60 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 3 --out "$W/fft.json"
    stage fft_cublas 25 python3 -m bench.fft --cubes 256 --sizes 1048576 --repeats 3 --path cublas --out "$W/fft_cublas.json"
    stage kernels_fftn 20 python3 -m bench.kernel_times fftn 256 --out "$W/kernels_fftn.json"
    stage gemm 50 python3 -m bench.gemm --sizes 4096 8192 16384 --families normal --no-emulated --samples 4 \
        --repeats 3 --paths cublas cutlass --modes accurate --out "$W/gemm.json"
    fi
elif [ "$profile" = next ]; then      # branch gpu-next, then the fifth session's unverified unit tests
    stage gpu_fft 130 python3 -m pytest -q --durations=6 -m gpu tests/fft/test_fft_gpu.py \
        -p no:cacheprovider --junitxml="$W/gpu_fft.xml"
    stage gpu_unit 120 python3 -m pytest -q --durations=6 -m gpu \
        tests/backends/test_prepared_gpu.py tests/backends/test_cupy_backend.py \
        -k "prepared or pair or add_residues or complex or stack" \
        -p no:cacheprovider --junitxml="$W/gpu_unit.xml"
    stage gpu_fused 120 python3 -m pytest -q --durations=6 -m gpu tests/backends/test_fused.py \
        -p no:cacheprovider --junitxml="$W/gpu_fused.xml"
    stage fft 60 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 2 --out "$W/fft.json"
    stage kernels_1d 25 python3 -m bench.kernel_times fft 16777216 --out "$W/kernels_1d.json"
    stage kernels_fftn 20 python3 -m bench.kernel_times fftn 256 --out "$W/kernels_fftn.json"
elif [ "$profile" = pairs ]; then     # the FFT on exact pair constants, with this session's one-pass steps
    stage gpu_pairs 190 python3 -m pytest -q --durations=6 -m gpu tests/fft/test_fft_gpu.py \
        tests/backends/test_prepared_gpu.py tests/backends/test_cupy_backend.py \
        -k "zero_signs or row_specials or add_residues or complex or fft or stack or specials or prepared or pair" \
        -p no:cacheprovider --junitxml="$W/gpu_pairs.xml"
    stage fft 90 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 2 --out "$W/fft.json"
    stage kernels_fftn 25 python3 -m bench.kernel_times fftn 256 --out "$W/kernels_fftn.json"
    stage kernels_1d 30 python3 -m bench.kernel_times fft 16777216 --out "$W/kernels_1d.json"
    stage fft_1024 50 python3 -m bench.fft --cubes 1024 --sizes --repeats 1 --out "$W/fft_1024.json"
elif [ "$profile" = fftpass ]; then   # the one-pass zero signs and residue sums, then where the FFT's time goes
    stage gpu_fftpass 170 python3 -m pytest -q --durations=6 -m gpu tests/fft/test_fft_gpu.py \
        tests/backends/test_cupy_backend.py -k "zero_signs or add_residues or complex or fft or stack or specials" \
        -p no:cacheprovider --junitxml="$W/gpu_fftpass.xml"
    stage fft 90 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 2 --out "$W/fft.json"
    stage kernels_fftn 30 python3 -m bench.kernel_times fftn 256 --out "$W/kernels_fftn.json"
    stage kernels_batch 20 python3 -m bench.kernel_times batch 4096x1024 --out "$W/kernels_batch.json"
    stage kernels_1d 20 python3 -m bench.kernel_times fft 1048576 --out "$W/kernels_1d.json"
    stage fft_1024 60 python3 -m bench.fft --cubes 1024 --sizes --repeats 1 --out "$W/fft_1024.json"
elif [ "$profile" = residual ]; then  # the exact residual kernel, row_bits, the FFT's direct plans
    stage gpu_residual 120 python3 -m pytest -q --durations=6 -m gpu tests/linalg/test_gpu.py tests/fft/test_fft_gpu.py \
        tests/backends/test_cupy_backend.py -k "not same_bits_wide and not chunked" -p no:cacheprovider \
        --junitxml="$W/gpu_residual.xml"
    stage linalg 50 python3 -m bench.linalg --sizes 16384 --ops solve solve_pos stages residual \
        --factorizations vendor --out "$W/linalg.json"
    stage fft 75 python3 -m bench.fft --cubes 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 2 --out "$W/fft.json"
    stage fft_profile 20 env CUDA_LAUNCH_BLOCKING=1 python3 -m bench.fft --profile 256
    stage fft_1024 80 python3 -m bench.fft --cubes 1024 --sizes --repeats 1 --out "$W/fft_1024.json"
    stage linalg_32k 75 python3 -m bench.linalg --sizes 32768 --ops solve solve_pos --factorizations vendor \
        --warmup 1 --repeats 1 --out "$W/linalg_32k.json"
elif [ "$profile" = fftfix ]; then   # after the FFT fixes and the linalg solve changes
    stage gpu_fix 180 python3 -m pytest -q --durations=10 -m gpu tests/fft/test_fft_gpu.py tests/linalg/test_gpu.py \
        tests/backends/test_prepared_gpu.py tests/test_dask.py -p no:cacheprovider --junitxml="$W/gpu_fix.xml"
    stage fft 130 python3 -m bench.fft --cubes 128 256 512 --real-cubes 512 --batches 4096x1024 \
        --sizes 65536 1048576 16777216 --repeats 2 --out "$W/fft.json"
    stage fft_direct 40 python3 -m bench.fft --cubes 512 --sizes --epilogue 1500 --repeats 2 --out "$W/fft_direct.json"
    stage fft_fused 40 python3 -m bench.fft --cubes 512 --sizes --path fused --repeats 2 --out "$W/fft_fused.json"
    stage linalg 110 python3 -m bench.linalg --sizes 16384 --ops solve solve_pos stages residual \
        --factorizations vendor --substitution-blocks 512 2048 --out "$W/linalg.json"
    stage fft_1024 60 python3 -m bench.fft --cubes 1024 --sizes --repeats 1 --out "$W/fft_1024.json"
elif [ "$profile" = full ]; then      # only when asked by name: a profile of the first chains that the
    # list above lacks ran this too (s16b and s16c did, past the call's limit)
    # The verification suite is mostly CPU work (fraction references): it runs beside the
    # GPU tests, and the timed benchmarks start only when both are done.
    stage verify 330 python3 -m ozaki verify --profile full --report "$W/report" &
    stage gpu_tests 150 python3 -m pytest -q -m gpu tests -p no:cacheprovider --junitxml="$W/gpu_tests.xml"
    wait
    stage steps 40 python3 -m bench.steps --sizes 4096 8192 16384 --out "$W/steps.json"
    stage gemm 130 python3 -m bench.gemm --sizes 1024 2048 4096 8192 16384 --families normal \
        --modes $modes --out "$W/gemm.json"
    stage gemm_phi1 25 python3 -m bench.gemm --sizes 16384 --families phi1 --no-emulated \
        --modes accurate accurate:15 accurate:14 --out "$W/gemm_phi1.json"
    stage zgemm 30 python3 -m bench.gemm --sizes 2048 4096 8192 --families complex --no-emulated --samples 12 \
        --modes accurate accurate:15 --out "$W/zgemm.json"
    stage report 20 python3 -c "from ozaki import verify; verify.rewrite_report('$W/report', '$W/gemm.json')"
    stage fft 50 python3 -m bench.fft --cubes 128 256 --sizes 65536 1048576 --repeats 2 --out "$W/fft.json"
fi
tar czf "$OUT/results.tgz" -C "$W" .
{
echo "== stages =="; cat "$W/stages.txt"
[ -f "$W/native.txt" ] && { echo "== native =="; tail -5 "$W/native.txt"; }
[ -f "$W/residue_tiles.txt" ] && { echo "== residue GEMM tiles, one process =="; grep -E "native|Error|error" "$W/residue_tiles.txt"; }
[ -f "$W/residue_gemm.txt" ] && { echo "== GEMM step: cuBLAS vs CUTLASS residues =="; grep -E "TOPS|Error|error" "$W/residue_gemm.txt"; }
echo "== GPU tests =="; for f in "$W"/gpu_*.txt; do echo "$(basename $f):"; grep -E "passed|failed|Error|assert" "$f" | tail -12; done
echo "== durations =="; grep -h -A10 "slowest" "$W"/gpu_*.txt | head -24
[ -f "$W/crossover.txt" ] && { echo "== fused vs cuBLAS path =="; grep -E "^(stack|square|skinny|complex|best)" "$W/crossover.txt"; }
[ -f "$W/sweep_short.txt" ] && { echo "== tiles on the small stacks =="; grep -E "^(tile|stack|best)|Error" "$W/sweep_short.txt"; }
for f in linalg linalg_32k dask; do [ -f "$W/$f.txt" ] && { echo "== $f =="; tail -15 "$W/$f.txt"; }; done
for f in certified certified_4k; do [ -f "$W/$f.txt" ] && { echo "== $f =="; tail -48 "$W/$f.txt"; }; done
[ -f "$W/steps.txt" ] && { echo "== time split =="; cat "$W/steps.txt"; }
[ -f "$W/residue_pass.txt" ] && { echo "== residue pass =="; grep -E "moduli|Error" "$W/residue_pass.txt"; }
echo "== GEMM =="; for f in "$W"/gemm*.txt "$W"/zgemm.txt; do [ -f "$f" ] && { echo "-- $(basename $f .txt)"; grep -v "^$" "$f"; }; done
[ -f "$W/graph_inputs.txt" ] && { echo "== graph inputs, host profile =="; grep -v "^$" "$W/graph_inputs.txt" | head -70; }
[ -f "$W/exact_stacks.txt" ] && { echo "== exact stacks, graphs and eager =="; grep "^exact stack" "$W/exact_stacks.txt"; }
[ -f "$W/fp8_exactness.txt" ] && { echo "== fp8 exactness =="; grep -E "inexact +[1-9]|TOPS" "$W/fp8_exactness.txt"; grep -c "inexact     0" "$W/fp8_exactness.txt"; }
for f in "$W"/ncu_stack_*.txt "$W"/ncu_batch_*.txt; do [ -f "$f" ] && { echo "== $(basename $f .txt) =="; python3 -m bench.ncu_table "$f" --outputs $(case $f in *4096x64*) echo 16777216;; *4096x1024*) echo 4194304;; *) echo 1;; esac) 2>&1 | head -30; }; done
for f in "$W"/ncu_residues_*.txt; do [ -f "$f" ] && { echo "== $(basename $f .txt) =="; grep -E "Duration|Executed Ipc A|Issue Slots Busy|Achieved Occupancy|Registers Per|DRAM Throughput|Compute \(SM\) Throughput|Memory Throughput|Stall|L2 Hit|Warp Cycles Per Issued" "$f" | head -24; }; done
for f in "$W"/kernels_*.txt; do [ -f "$f" ] && { echo "== $(basename $f .txt) =="; head -22 "$f"; }; done
[ -f "$W/ncu_epilogue.txt" ] && { echo "== ncu epilogue =="; grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Issue Slots Busy|L2 Hit|Warp Cycles Per Issued|Stall" "$W/ncu_epilogue.txt" | head -24; }
[ -f "$W/ncu.txt" ] && { echo "== ncu =="; grep -E "^  fused|Duration|Executed Instructions  |Registers Per|Issue Slots Busy|Achieved Occ" "$W/ncu.txt"; }
[ -f "$W/fft_profile.txt" ] && { echo "== FFT profile =="; head -45 "$W/fft_profile.txt"; }
ls "$W"/fft*.json >/dev/null 2>&1 && { echo "== FFT =="; for f in "$W"/fft*.txt; do echo "-- $(basename $f .txt)"; grep -v "^$" "$f" | cut -c1-480; done; }
[ -f "$W/verify.txt" ] && { echo "== verify =="; grep -E "FAIL|fail|verify:" "$W/verify.txt" | tail -8; }
} | tee "$OUT/summary.txt"
