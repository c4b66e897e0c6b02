import ctypes
import numpy as np, cupy as cp
from tricov.backends import cuda_libs as lib

def lt(name): return lib._lt(name)

def plan_many(dtype, m, n, k, lda, ldb, ldc, count=16):
    kind = lib.CUDA_TYPE[np.dtype(dtype)]; compute = lib._LT_COMPUTE[np.dtype(dtype)]
    desc = ctypes.c_void_p(); lt("cublasLtMatmulDescCreate")(ctypes.byref(desc), compute, kind)
    for attr in (3, 4):
        op = ctypes.c_int32(0); lt("cublasLtMatmulDescSetAttribute")(desc, attr, ctypes.byref(op), 4)
    layouts = []
    for rows, cols, ld in ((m, k, lda), (k, n, ldb), (m, n, ldc), (m, n, ldc)):
        lay = ctypes.c_void_p(); lt("cublasLtMatrixLayoutCreate")(ctypes.byref(lay), kind, rows, cols, ld); layouts.append(lay)
    pref = ctypes.c_void_p(); lt("cublasLtMatmulPreferenceCreate")(ctypes.byref(pref))
    most = ctypes.c_uint64(32 << 20); lt("cublasLtMatmulPreferenceSetAttribute")(pref, 1, ctypes.byref(most), 8)
    res = ctypes.create_string_buffer(96 * count); found = ctypes.c_int(0)
    lt("cublasLtMatmulAlgoGetHeuristic")(lib.cublas_handle(), desc, *layouts, pref, count, res, ctypes.byref(found))
    return desc, layouts, res, found.value

def timeit(fn, reps=5):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    fn()
    s.record()
    for _ in range(reps): fn()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / reps * 1e3

h = lib.cublas_handle(); stream = cp.cuda.get_current_stream().ptr; lib.bind_blas(stream)
for dt, m, n, k, ld in [(np.float32, 8192, 256, 8192, 16384), (np.float32, 4096, 256, 4096, 16384),
                        (np.float32, 2048, 256, 2048, 16384), (np.float32, 8192, 128, 8192, 16384),
                        (np.float32, 8192, 64, 8192, 16384), (np.float32, 4096, 4096, 4096, 8192),
                        (np.float64, 8192, 256, 8192, 16384), (np.float64, 4096, 256, 4096, 16384),
                        (np.float64, 4096, 8192, 4096, 8192)]:
    A = cp.random.standard_normal((ld * k,)).astype(dt); B = cp.random.standard_normal((ld * n,)).astype(dt)
    C = cp.zeros((ld * n,), dtype=dt)
    one = np.ones(1, dt); zero = np.zeros(1, dt)
    gemm = lib.blas("gemm_v2", np.dtype(dt))
    desc, layouts, res, found = plan_many(dt, m, n, k, ld, ld, ld)
    fns = {"cublas": lambda: gemm(h, 0, 0, m, n, k, one.ctypes.data, A.data.ptr, ld, B.data.ptr, ld, zero.ctypes.data, C.data.ptr, ld)}
    info = {}
    works = []
    for i in range(found):
        ws = ctypes.c_size_t.from_buffer(res, 96 * i + 64).value
        waves = ctypes.c_float.from_buffer(res, 96 * i + 76).value
        work = cp.empty(max(ws, 1), dtype=np.uint8); works.append(work)
        algo = ctypes.addressof(res) + 96 * i
        fns[f"#{i}"] = (lambda algo=algo, work=work, ws=ws: lt("cublasLtMatmul")(h, desc, one.ctypes.data, A.data.ptr, layouts[0], B.data.ptr, layouts[1], zero.ctypes.data, C.data.ptr, layouts[2], C.data.ptr, layouts[3], algo, work.data.ptr, ws, stream))
        info[f"#{i}"] = (waves, ws >> 20)
    acc = {nm: [] for nm in fns}
    for r in range(4):
        items = list(fns.items())
        for nm, fn in (items if r % 2 == 0 else items[::-1]):
            acc[nm].append(timeit(fn))
    med = {nm: float(np.median(v)) for nm, v in acc.items()}
    print(f"{np.dtype(dt).name} {m}x{n}x{k}: cublas {med['cublas']:.0f}us; " + ", ".join(f"{nm} {med[nm]:.0f}us w={info[nm][0]:.2f} ws={info[nm][1]}M" for nm in fns if nm != 'cublas'), flush=True)
