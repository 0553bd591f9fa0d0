// Batched transposes through shared-memory tiles: out[b][c][r] = in[b][r][c] for
// r < rows, c < cols, b < batch, with leading dimensions and batch strides in
// elements (ELEM: double or double2, from the defines).
//
// ozaki.fft reads and writes the rows of an axis that is not the last one: a row's
// points lie a whole plane (or row) apart, neighbouring rows next to each other, so a
// block of rows is a transpose of a strided matrix (or of one per slab).  CuPy's
// elementwise copy reads such a view with a 16 MB stride between a warp's lanes at
// 1024^3; here a warp reads 32 neighbouring rows' points and writes 32 points of one
// row, both along memory.
//
// Block: 32 x 8 threads, one 32 x 32 tile (one column of padding: the tile's
// columns fall on different banks).  Grid: x over column tiles, y over row tiles
// (at most 65535: the caller copies otherwise), z over the batch (grid-stride past
// the z limit).

#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void transpose(const ELEM* __restrict__ in, long long in_ld, long long in_batch,
                                     ELEM* __restrict__ out, long long out_ld, long long out_batch,
                                     long long rows, long long cols, long long batch) {
    __shared__ ELEM tile[TILE][TILE + 1];
    const long long r0 = (long long)blockIdx.y * TILE, c0 = (long long)blockIdx.x * TILE;
    for (long long b = blockIdx.z; b < batch; b += gridDim.z) {
        const ELEM* src = in + b * in_batch;
        ELEM* dst = out + b * out_batch;
        for (int i = threadIdx.y; i < TILE; i += TILE_ROWS) {
            long long r = r0 + i, c = c0 + threadIdx.x;
            if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * in_ld + c];
        }
        __syncthreads();
        for (int i = threadIdx.y; i < TILE; i += TILE_ROWS) {
            long long c = c0 + i, r = r0 + threadIdx.x;
            if (r < rows && c < cols) dst[c * out_ld + r] = tile[threadIdx.x][i];
        }
        __syncthreads();
    }
}
