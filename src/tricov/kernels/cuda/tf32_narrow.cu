// tricov: float32 products of few columns, D = alpha A op(B) + beta C, on the TF32 tensor cores
// at float32 accuracy (3xTF32, as tf32_split.cu) in one pass over A, for Hopper (sm_90a: the
// warpgroup MMA, wgmma).
//
// The narrow products of a TRSM or TRMM with few right-hand sides (A of m x k, m and k large,
// C of n <= a few hundred columns) ran on cuBLAS's FP32 GEMMs: splitting A into TF32 parts in
// memory costs more than the tensor cores save there. Here A is split in registers instead:
// each block copies slabs of A (64 rows x 32 depths) into shared memory by cp.async, each thread
// reads its fragments of them and splits them into hi and lo (split_rna), and the tensor cores
// read B's parts, split once beforehand by tf32_narrow_parts (B is small) and copied slab by
// slab by one bulk copy (cp.async.bulk, completing on an mbarrier), from shared memory. Every 8
// depths take three wgmma, lo_A hi_B + hi_A lo_B + hi_A hi_B, into float32 sums in registers; a
// slab's products run while the next slab's fragments are split (one group in flight).
//
// One warpgroup (128 threads) per block takes 64 rows of C and BN columns (64, 128 or 256),
// over all the depth or, where those blocks alone would leave multiprocessors idle, over a
// part of it (blocks along z; their sums added by tf32_narrow_sum). Rows of C and A's rows may
// end anywhere on a multiple of 4; n must be a multiple of BN and k of 32; A 16-byte aligned
// with lda a multiple of 4, C and D 8-byte aligned with ldc and ldd even (the host checks); D
// may be C. The fragment rows are permuted: fragment row g of warp w is row 16 w + 2 g of the
// block, row g + 8 is 16 w + 2 g + 1, so a thread reads each pair of its rows by one 8-byte
// load, and A's slab in shared memory is swizzled by 16-byte chunks (chunk c of depth kk at
// c ^ 2 (kk & 3)) so that neither the copies nor the loads conflict. With fill 1 or 2 only the
// lower or upper triangle of D is written, and blocks wholly outside it return at once: a
// SYRK's C = alpha A A^T + beta C (op(B) = A^T). Rates against cuBLAS:
// benchmarks/gpu_fused_tf32.py; the experiments behind the design (mma.sync kernels, tilings):
// benchmarks/exp_narrow_fused_tf32.py (session 37).
#include "common.cuh"
#include "tf32.cuh"

namespace tricov {

// B (k x n, or n x k where op(B) transposes it) split into TF32 parts in the order the blocks
// of tf32_narrow copy them: for block column nb, slab s of depth 32, part p (hi, lo), chunk kc
// of 4 depths and column j of the block, 4 floats at (((nb * slabs + s) * 2 + p) * 8 + kc) * BN
// + j. One thread per column and chunk, consecutive threads along B's stored columns (the
// chunks of a column of B, or the columns of op(B) where it transposes B: its reads coalesce).
template <int BN>
__global__ void tf32_narrow_parts(int n, int k, const float* __restrict__ B, long long ldb,
                                  int trans, float* __restrict__ P)
{
    const long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const int chunks = k / 4;
    if (idx >= static_cast<long long>(n) * chunks) return;
    const int j = static_cast<int>(trans ? idx % n : idx / chunks);
    const int c = static_cast<int>(trans ? idx / n : idx % chunks);
    float hi[4], lo[4];
    for (int e = 0; e < 4; ++e) {
        const long long kk = 4 * c + e;
        tf32_parts(trans ? B[j + kk * ldb] : B[kk + j * ldb], hi[e], lo[e]);
    }
    const long long slabs = k / 32, s = c / 8, kc = c % 8;
    float4* d = reinterpret_cast<float4*>(P) + ((((j / BN) * slabs + s) * 2) * 8 + kc) * BN + j % BN;
    d[0] = make_float4(hi[0], hi[1], hi[2], hi[3]);
    d[8 * BN] = make_float4(lo[0], lo[1], lo[2], lo[3]);
}

// wgmma m64nNk8 with TF32 A from registers and B by descriptor, adding to float32 sums in d (N / 2
// per thread). Each shape needs its own literal list of accumulator operands.
__device__ __forceinline__ void wgmma_m64n64k8(float* d, const unsigned* a, unsigned long long b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
                 "}, {%32,%33,%34,%35}, %36, p, 1, 1;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

__device__ __forceinline__ void wgmma_m64n128k8(float* d, const unsigned* a, unsigned long long b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
                 "}, {%64,%65,%66,%67}, %68, p, 1, 1;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

__device__ __forceinline__ void wgmma_m64n256k8(float* d, const unsigned* a, unsigned long long b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
                 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
                 "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
                 "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
                 "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
                 "}, {%128,%129,%130,%131}, %132, p, 1, 1;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// The wgmma of a block's BN columns.
template <int BN>
__device__ __forceinline__ void wgmma_m64k8(float* d, const unsigned* a, unsigned long long b)
{
    if constexpr (BN == 64) wgmma_m64n64k8(d, a, b);
    else if constexpr (BN == 128) wgmma_m64n128k8(d, a, b);
    else wgmma_m64n256k8(d, a, b);
}

// A's parts in the inner loop, where tf32_parts' integer rounding made the whole kernel 1.37x
// as slow (8192 x 256 x 8192: 644 against 470 us, session 37): hi = x rounded to nearest by the
// hardware's conversion (ties away from zero,
// where tf32_round breaks them to even: either is a nearest TF32 value, so x = hi + lo to
// 2^-22 |x| all the same), lo = x - hi rounded likewise. As in tf32_parts, a finite x that
// would round up to infinity is truncated instead, and lo of an infinite or NaN x is zero.
__device__ __forceinline__ void split_rna(float x, unsigned& hi, unsigned& lo)
{
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(hi) : "f"(x));
    const bool finite = isfinite(x);
    if (finite && (hi & 0x7f800000u) == 0x7f800000u) hi = __float_as_uint(x) & 0xffffe000u;
    const float rest = x - __uint_as_float(hi);
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(lo) : "f"(finite ? rest : 0.0f));
}

// Whether element (i, j) of D is written: fill 0 every element, 1 the lower triangle (i >= j),
// 2 the upper (i <= j): a SYRK's C = alpha A A^T + beta C is this product with op(B) = A^T.
__device__ __forceinline__ bool in_fill(int fill, long long i, long long j)
{
    return fill == 0 || (fill == 1 ? i >= j : i <= j);
}

__device__ __forceinline__ unsigned shared_address(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// A shared-memory matrix descriptor without swizzle: core matrices of 8 rows of 16 bytes, lbo
// bytes apart along the depth and sbo bytes apart along the columns.
__device__ __forceinline__ unsigned long long smem_descriptor(const float* p, unsigned lbo,
                                                              unsigned sbo)
{
    const unsigned address = shared_address(p);
    return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
           static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16 |
           static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32;
}

// 16 bytes from global to shared memory, asynchronously; zeros where !valid.
__device__ __forceinline__ void copy16(float* shared, const float* global, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 ::"r"(shared_address(shared)), "l"(global), "r"(valid ? 16 : 0));
}

template <int BN, int STAGES>
__global__ void __launch_bounds__(128, 1)
tf32_narrow(int m, int n, int k, float alpha, const float* __restrict__ A, long long lda,
            const float* __restrict__ P, float beta, const float* C, long long ldc, float* D,
            long long ldd, int fill, float* __restrict__ W)
{
    constexpr int BM = 64, BK = 32, ASZ = BK * BM, BSZ = 2 * 8 * BN * 4;
    constexpr unsigned LBO = BN * 16, SBO = 128;  // B's core matrices along depth, columns
    extern __shared__ float4 shared4[];
    float* const as0 = reinterpret_cast<float*>(shared4);
    float* const bs0 = as0 + STAGES * ASZ;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    if (!in_fill(fill, row0 + BM - 1, col0) && !in_fill(fill, row0, col0 + BN - 1))
        return;  // a block wholly outside the triangle asked for
    A += row0;
    // blocks along z take parts of the depth (gridDim.z of them), their sums going to W
    const int all = k / BK, first = all * blockIdx.z / gridDim.z;
    const int slabs = all * (blockIdx.z + 1) / gridDim.z - first;
    A += static_cast<long long>(first) * BK * lda;
    P += (static_cast<long long>(blockIdx.x) * all + first) * BSZ;
    __shared__ alignas(8) unsigned long long full[STAGES];  // B's stage has landed
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&full[s])));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    auto load = [&](int stage, int slab) {
        const float* a = A + static_cast<long long>(slab) * BK * lda;
        float* as = as0 + stage * ASZ;
#pragma unroll
        for (int c = tid; c < ASZ / 4; c += 128) {
            const int kk = c >> 4, cc = c & 15;
            const bool valid = row0 + 4 * cc < m;
            copy16(as + kk * BM + ((cc ^ ((kk & 3) << 1)) << 2),
                   valid ? a + kk * lda + 4 * cc : A, valid);
        }
        if (tid == 0) {  // B's parts of the slab: one bulk copy, counted by the stage's barrier
            const unsigned bar = shared_address(&full[stage]);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         ::"r"(bar), "r"(BSZ * 4) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1], %2, [%3];"
                         ::"r"(shared_address(bs0 + stage * BSZ)),
                         "l"(P + static_cast<long long>(slab) * BSZ), "r"(BSZ * 4), "r"(bar)
                         : "memory");
        }
    };
    auto commit = [] { asm volatile("cp.async.commit_group;"); };

    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slabs) load(s, s);
        commit();
    }
    const int offset = (((4 * warp + (g >> 1)) ^ (t << 1)) << 2) + 2 * (g & 1);
    unsigned parts[2][2][4][4];  // [slab parity][hi, lo][step][fragment register]

    auto step = [&](int slab, unsigned (&frag)[2][4][4]) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
        for (unsigned done = 0; !done;)
            asm volatile("{\n.reg .pred p;\n"
                         "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                         "selp.u32 %0, 1, 0, p;\n}"
                         : "=r"(done)
                         : "r"(shared_address(&full[slab % STAGES])), "r"((slab / STAGES) & 1)
                         : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // A's copies, for wgmma
        __syncthreads();
        const float* as = as0 + (slab % STAGES) * ASZ;
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
            const float2 x0 = *reinterpret_cast<const float2*>(as + (ks * 8 + t) * BM + offset);
            const float2 x1 =
                *reinterpret_cast<const float2*>(as + (ks * 8 + t + 4) * BM + offset);
            const float x[4] = {x0.x, x0.y, x1.x, x1.y};
#pragma unroll
            for (int r = 0; r < 4; ++r) split_rna(x[r], frag[0][ks][r], frag[1][ks][r]);
        }
        const float* bs = bs0 + (slab % STAGES) * BSZ;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
            const unsigned long long bh = smem_descriptor(bs + 8 * ks * BN, LBO, SBO);
            const unsigned long long bl = smem_descriptor(bs + (32 + 8 * ks) * BN, LBO, SBO);
            wgmma_m64k8<BN>(acc, frag[1][ks], bh);  // lo_A hi_B
            wgmma_m64k8<BN>(acc, frag[0][ks], bl);  // hi_A lo_B
            wgmma_m64k8<BN>(acc, frag[0][ks], bh);  // hi_A hi_B
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        // the previous slab's products are done in every warp: its stage and fragments are free
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        __syncthreads();
        if (slab + STAGES - 1 < slabs) load((slab + STAGES - 1) % STAGES, slab + STAGES - 1);
        commit();
    };
    for (int slab = 0; slab < slabs; slab += 2) {
        step(slab, parts[0]);
        if (slab + 1 < slabs) step(slab + 1, parts[1]);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    asm volatile("cp.async.wait_group 0;");

    // acc[4 j + r]: rows 16 w + 2 g (r = 0, 1) and 16 w + 2 g + 1 (r = 2, 3) of the block,
    // columns 8 j + 2 t (r = 0, 2) and 8 j + 2 t + 1 (r = 1, 3)
    const int row = row0 + 16 * warp + 2 * g;
    if (row >= m) return;
    if (gridDim.z > 1) {  // this part's sums, column-major m x n, summed by tf32_narrow_sum
        float* w = W + static_cast<long long>(blockIdx.z) * m * n;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const long long col = blockIdx.x * BN + 8 * j + 2 * t + e;
                *reinterpret_cast<float2*>(w + col * m + row) =
                    make_float2(acc[4 * j + e], acc[4 * j + 2 + e]);
            }
        return;
    }
    // C's values four columns of 8 at a time, all read before any is written (D may be C, so
    // the compiler cannot move a read above an earlier write; read one at a time, their
    // latencies added up: a call of SYRK's shape, 4096 x 4096 x 512, took 313 us under Nsight
    // Compute against 195 with beta = 0, session 37)
#pragma unroll
    for (int j0 = 0; j0 < BN / 8; j0 += 4) {
        float2 c[4][2] = {};
        if (beta != 0.0f) {  // C is not read where beta is zero (NaN there stays out)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    c[j][e] = *reinterpret_cast<const float2*>(
                        C + (blockIdx.x * BN + 8 * (j0 + j) + 2 * t + e) * ldc + row);
        }
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const long long col = blockIdx.x * BN + 8 * (j0 + j) + 2 * t + e;
                const float v[2] = {alpha * acc[4 * (j0 + j) + e] + beta * c[j][e].x,
                                    alpha * acc[4 * (j0 + j) + 2 + e] + beta * c[j][e].y};
                if (in_fill(fill, row, col) && in_fill(fill, row + 1, col))
                    *reinterpret_cast<float2*>(D + col * ldd + row) = make_float2(v[0], v[1]);
                else
                    for (int r = 0; r < 2; ++r)
                        if (in_fill(fill, row + r, col)) D[col * ldd + row + r] = v[r];
            }
    }
}

// D = alpha (W_0 + ... + W_{splits-1}) + beta C: the sums of tf32_narrow's parts of the depth,
// added in order (the result does not depend on which part finished first). One thread per
// element.
__global__ void tf32_narrow_sum(int m, int n, int splits, const float* __restrict__ W,
                                float alpha, float beta, const float* C, long long ldc,
                                float* D, long long ldd, int fill)
{
    const long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long size = static_cast<long long>(m) * n;
    if (idx >= size) return;
    const long long i = idx % m, j = idx / m;
    if (!in_fill(fill, i, j)) return;
    float s = 0.0f;
    for (int p = 0; p < splits; ++p) s += W[p * size + idx];
    s *= alpha;
    if (beta != 0.0f) s += beta * C[i + j * ldc];
    D[i + j * ldd] = s;
}

}  // namespace tricov
