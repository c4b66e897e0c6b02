// tricov: scalar types and logical-view accessors shared by every CUDA kernel.
// Compiled at run time by NVRTC (through CuPy) and, in CI, by nvcc: no external headers.
#pragma once

namespace tricov {

// A complex number laid out as NumPy's complex64/complex128 (real, imaginary).
template <typename R>
struct alignas(2 * sizeof(R)) cplx {
    R re, im;
    __host__ __device__ cplx() : re(0), im(0) {}
    __host__ __device__ cplx(R r) : re(r), im(0) {}
    __host__ __device__ cplx(R r, R i) : re(r), im(i) {}
};
template <typename R> __device__ __forceinline__ cplx<R> operator+(cplx<R> a, cplx<R> b) {
    return cplx<R>(a.re + b.re, a.im + b.im);
}
template <typename R> __device__ __forceinline__ cplx<R> operator-(cplx<R> a, cplx<R> b) {
    return cplx<R>(a.re - b.re, a.im - b.im);
}
template <typename R> __device__ __forceinline__ cplx<R> operator*(cplx<R> a, cplx<R> b) {
    return cplx<R>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
template <typename R> __device__ __forceinline__ cplx<R> operator/(cplx<R> a, cplx<R> b) {
    // Smith's algorithm: no overflow for large |b|.
    if (fabs(b.re) >= fabs(b.im)) {
        R r = b.im / b.re, d = b.re + b.im * r;
        return cplx<R>((a.re + a.im * r) / d, (a.im - a.re * r) / d);
    }
    R r = b.re / b.im, d = b.im + b.re * r;
    return cplx<R>((a.re * r + a.im) / d, (a.im * r - a.re) / d);
}
template <typename R> __device__ __forceinline__ cplx<R>& operator+=(cplx<R>& a, cplx<R> b) {
    return a = a + b;
}
template <typename R> __device__ __forceinline__ cplx<R>& operator-=(cplx<R>& a, cplx<R> b) {
    return a = a - b;
}

__device__ __forceinline__ float conj_(float x) { return x; }
__device__ __forceinline__ double conj_(double x) { return x; }
template <typename R> __device__ __forceinline__ cplx<R> conj_(cplx<R> x) {
    return cplx<R>(x.re, -x.im);
}

__device__ __forceinline__ float real_part(float x) { return x; }
__device__ __forceinline__ double real_part(double x) { return x; }
template <typename R> __device__ __forceinline__ cplx<R> real_part(cplx<R> x) {
    return cplx<R>(x.re, R(0));
}

// The real type under T, the real part, and a cheap magnitude (|re| + |im| for complex data:
// within a factor sqrt(2) of the modulus, enough for condition estimates).
template <typename T> struct real_of { using type = T; };
template <typename R> struct real_of<cplx<R>> { using type = R; };
template <typename T> using real_t = typename real_of<T>::type;

__device__ __forceinline__ float re(float x) { return x; }
__device__ __forceinline__ double re(double x) { return x; }
template <typename R> __device__ __forceinline__ R re(cplx<R> x) { return x.re; }

__device__ __forceinline__ float mag(float x) { return fabsf(x); }
__device__ __forceinline__ double mag(double x) { return fabs(x); }
template <typename R> __device__ __forceinline__ R mag(cplx<R> x) {
    return fabs(x.re) + fabs(x.im);
}

// 1 / sqrt(x) (within an ulp or two).
__device__ __forceinline__ float rsq(float x) { return rsqrtf(x); }
__device__ __forceinline__ double rsq(double x) { return rsqrt(x); }

__device__ __forceinline__ float shfl(float v, int src) {
    return __shfl_sync(0xffffffffu, v, src);
}
__device__ __forceinline__ double shfl(double v, int src) {
    return __shfl_sync(0xffffffffu, v, src);
}
template <typename R> __device__ __forceinline__ cplx<R> shfl(cplx<R> v, int src) {
    return cplx<R>(__shfl_sync(0xffffffffu, v.re, src), __shfl_sync(0xffffffffu, v.im, src));
}

// Element (i, j) of the logical matrix op(M), M column-major with leading dimension ld.
// op as in tricov/_options.py: 0 = N, 1 = T, 2 = R (conjugate), 3 = C (conjugate transpose).
template <typename T>
__device__ __forceinline__ T load(const T* M, long long ld, int op, int i, int j) {
    T v = (op & 1) ? M[j + i * ld] : M[i + j * ld];
    return (op & 2) ? conj_(v) : v;
}

template <typename T>
__device__ __forceinline__ void store(T* M, long long ld, int op, int i, int j, T v) {
    if (op & 2) v = conj_(v);
    if (op & 1) M[j + i * ld] = v; else M[i + j * ld] = v;
}

}  // namespace tricov
