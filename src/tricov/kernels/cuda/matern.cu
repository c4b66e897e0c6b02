// tricov: the scaled Matern correlation M_nu(t) = 2^(1-nu) / Gamma(nu) t^nu K_nu(t), in place on
// a strided block of doubles, on the GPU. The same method as the CPU path
// (tricov/geostat/_bessel.py), whose docstrings derive it: inside [2^-100, 512) a table of
// Chebyshev pieces (one per quarter-octave) of H = exp(t) M (one function for nu < 5/2, else
// the base orders mu + 1 and mu + 2 climbed to nu by the upward recurrence); outside it, or
// for every element when the caller asks (``exact``), Temme's series (t <= 1.25) or Steed's
// continued fraction. The constant arrays come from ``_bessel.orders(nu)`` and
// ``_bessel.table(nu)``, laid out as there.
#include "common.cuh"

namespace tricov {
namespace matern {

constexpr int CHEB = 14;
constexpr int E_MIN = -99;
constexpr int TEMME_TERMS = 64;
constexpr int CF_TERMS = 160;
constexpr double SMALL = 0x1p-100;
constexpr double TABLE_MAX = 512.0;
constexpr double TEMME_MAX = 1.25;
constexpr double EPS = 1e-16;
constexpr double PI = 3.14159265358979323846;
// Indices into ``consts`` (see _bessel.orders).
enum { MU, M, G1, G2, GP, GM, MPIS, A0, A1, A2, B0, B1, TINYC };

struct Orders {
    const double* consts;  // (13,)
    const double* temme;   // (4, TEMME_TERMS), row-major
    const double* steed;   // (2, CF_TERMS), row-major
    const double* up;      // (m - 2,)
};

// K_mu, K_{mu+1} by Temme's series, scaled as in _bessel._temme_sums.
__device__ void temme_sums(double x, double lx, const Orders& o, double& s0, double& s1) {
    const double* c = o.consts;
    double mu = c[MU];
    double l2x = log(2.0) - lx;
    double sigma = mu * l2x;
    double w2 = exp(-2.0 * sigma);
    double shc = sigma != 0.0 ? -expm1(-2.0 * sigma) / (2.0 * sigma) : 1.0;
    double f = c[MPIS] * (0.5 * (1.0 + w2) * c[G1] + shc * l2x * c[G2]);
    double p = 0.5 * c[GP];
    double q = 0.5 * w2 * c[GM];
    double y = 0.25 * x * x;
    double ck = 1.0;
    s0 = f;
    s1 = p;
    for (int k = 1; k < TEMME_TERMS; ++k) {
        f = (k * f + p + q) * o.temme[k];
        p *= o.temme[TEMME_TERMS + k];
        q *= o.temme[2 * TEMME_TERMS + k];
        ck *= y * o.temme[3 * TEMME_TERMS + k];
        double d0 = ck * f, d1 = ck * (p - k * f);
        s0 += d0;
        s1 += d1;
        if (fabs(d0) < EPS * fabs(s0) && fabs(d1) < EPS * fabs(s1)) break;
    }
}

// exp(x) K_mu(x) and exp(x) K_{mu+1}(x) by Steed's continued fraction, x > 1.25.
__device__ void k_steed(double x, const Orders& o, double& k0, double& k1) {
    double mu = o.consts[MU];
    double b = 2.0 * (1.0 + x);
    double d = 1.0 / b, dh = d, h = d;
    double q_prev = 0.0, q = 1.0;
    double big_q = o.steed[CF_TERMS + 1];
    double s = 1.0 + dh * big_q;
    for (int n = 2; n < CF_TERMS; ++n) {
        double alpha = o.steed[n];
        double q_next = (q_prev - b * q) / alpha;
        q_prev = q;
        q = q_next;
        big_q += o.steed[CF_TERMS + n] * q;
        b += 2.0;
        d = 1.0 / (b + alpha * d);
        dh = (b * d - 1.0) * dh;
        h += dh;
        double ds = big_q * dh;
        s += ds;
        if (fabs(ds) < EPS * fabs(s)) break;
    }
    k0 = sqrt(PI / (2.0 * x)) / s;
    k1 = k0 * (mu + 0.5 + x + (mu * mu - 0.25) * h) / x;
}

// exp(x) M_a(x) at the two base orders (see _bessel._exact_pair), x >= 2^-100.
__device__ void exact_pair(double x, double lx, const Orders& o, double& h_lo, double& h_hi) {
    const double* c = o.consts;
    double mu = c[MU];
    bool m0 = c[M] == 0.0;
    if (x <= TEMME_MAX) {
        double sf, sh;
        temme_sums(x, lx, o, sf, sh);
        double ex = exp(x);
        if (m0) {
            h_lo = c[A0] * sf * ex;
            h_hi = 0.0;
            return;
        }
        double h1 = c[A1] * sh;
        h_lo = h1 * ex;
        h_hi = (h1 + c[A2] * x * x * sf) * ex;
        return;
    }
    double k0, k1;
    k_steed(x, o, k0, k1);
    if (m0) {
        h_lo = c[B0] * pow(x, mu) * k0;
        h_hi = 0.0;
        return;
    }
    double pre = c[B1] * pow(x, mu + 1.0);
    h_lo = pre * k1;
    h_hi = h_lo + pre * x * k0 / (2.0 * (mu + 1.0));
}

// Order nu from orders mu + 1 (h_lo) and mu + 2 (h_hi), m >= 2.
__device__ double upward(double x, int m, double h_lo, double h_hi, const double* up) {
    double x2 = x * x;
    for (int i = 0; i < m - 2; ++i) {
        double next = h_hi + x2 * up[i] * h_lo;
        h_lo = h_hi;
        h_hi = next;
    }
    return h_hi;
}

// M_nu(x) by the series and the continued fraction (see _bessel._exact).
__device__ double exact(double x, const Orders& o) {
    const double* c = o.consts;
    int m = static_cast<int>(c[M]);
    if (x != x) return x;
    if (x < SMALL) return c[TINYC] == 0.0 ? 1.0 : 1.0 - c[TINYC] * pow(0.5 * x, 2.0 * (c[MU] + m));
    if (isinf(x)) return 0.0;
    double lx = log(x);
    if (x > 700.0 && x - (c[MU] + m + 1.0) * lx > 760.0) return 0.0;
    double h_lo, h_hi;
    exact_pair(x, lx, o, h_lo, h_hi);
    if (m <= 1) return h_lo * exp(-x);
    if (m == 2) return h_hi * exp(-x);
    double e = exp(-x);
    return upward(x, m, h_lo * e, h_hi * e, o.up);
}

// One Clenshaw sum of a Chebyshev piece.
__device__ __forceinline__ double clenshaw(const double* a, double u2) {
    double b1 = 0.0, b2 = 0.0;
    for (int k = CHEB - 1; k > 0; --k) {
        double b0 = u2 * b1 - b2 + a[k];
        b2 = b1;
        b1 = b0;
    }
    return 0.5 * u2 * b1 - b2 + a[0];
}


// M_nu(x): the table of NF functions (1 or 2, see the header), or with ``exact`` (or outside
// the table) the series and the continued fraction.
template <int NF>
__device__ double value(double x, const Orders& o, const double* coef, const double* sub,
                        bool exact) {
    if (exact || !(x >= SMALL && x < TABLE_MAX)) return matern::exact(x, o);
    int ex;
    double f = frexp(x, &ex);
    const double q1 = 0x1.306fe0a31b715p-1, q2 = 0x1.6a09e667f3bcdp-1,
                 q3 = 0x1.ae89f995ad3adp-1;  // 2^(k/4) / 2, k = 1, 2, 3
    int s = (f >= q1) + (f >= q2) + (f >= q3);
    const double* a = coef + (static_cast<long long>((ex - E_MIN) * 4 + s) * NF) * CHEB;
    double u2 = 2.0 * (f - sub[s]) * sub[4 + s];
    double off = ex <= 0 ? 1.0 : 0.0;  // below 1 the table holds H - 1
    double h_lo = off + clenshaw(a, u2);
    if (NF == 1) return h_lo * exp(-x);
    double h_hi = off + clenshaw(a + CHEB, u2);
    return upward(x, static_cast<int>(o.consts[M]), h_lo, h_hi, o.up) * exp(-x);
}

}  // namespace matern

// t[i * rs + j * cs] <- M_nu(t[...]) for i < rows, j < cols (strides in elements).
// NF: functions in the table (1 or 2, see the header); ``exact``: skip the table.
template <int NF>
__global__ void matern_block(int rows, int cols, long long rs, long long cs, double* t,
                             const double* coef, const double* sub, const double* consts,
                             const double* temme, const double* steed, const double* up,
                             bool exact) {
    const matern::Orders o{consts, temme, steed, up};
    long long total = static_cast<long long>(rows) * cols;
    for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
         e += static_cast<long long>(gridDim.x) * blockDim.x) {
        int i = static_cast<int>(e % rows), j = static_cast<int>(e / rows);
        double* p = t + i * rs + j * cs;
        *p = matern::value<NF>(*p, o, coef, sub, exact);
    }
}

// Covariance families of covariance_block (tricov/geostat/_entries_cuda.py).
enum Family { EXPONENTIAL, SQEXP, POWEXP, MATERN05, MATERN15, MATERN25, MATERN };

// out[i * rs + j * cs] <- sigma2 C(|x_i - y_j| / beta) in one pass: the distance (Euclidean
// in d coordinates, or great-circle on (longitude, latitude) in degrees on a sphere of
// ``radius``), the correlation of FAMILY (``third``: nu or alpha; the Matern arrays and NF
// as in matern_block for MATERN), computed as the CPU path does (tricov/geostat/kernels.py,
// distance.py). x and y are addressed through (row, column) strides in elements. Threads
// run down i (the contiguous direction of ``out``), blocks of the second grid dimension
// across j.
template <int FAMILY, bool GREAT_CIRCLE, int NF>
__global__ void covariance_block(int rows, int cols, int d, const double* x, long long xr,
                                 long long xc, const double* y, long long yr, long long yc,
                                 double* out, long long rs, long long cs, double sigma2,
                                 double beta, double third, double radius, const double* coef,
                                 const double* sub, const double* consts, const double* temme,
                                 const double* steed, const double* up, bool exact) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const double* xi = x + i * xr;
    const double half_rad = 3.14159265358979323846 / 360.0;
    const double cos_i = GREAT_CIRCLE ? cos(xi[xc] * (2 * half_rad)) : 0.0;
    const matern::Orders o{consts, temme, steed, up};
    for (int j = blockIdx.y; j < cols; j += gridDim.y) {
        const double* yj = y + j * yr;
        double r;
        if (GREAT_CIRCLE) {
            double a = sin((xi[xc] - yj[yc]) * half_rad);
            double b = sin((xi[0] - yj[0]) * half_rad);
            double h = a * a + b * b * cos_i * cos(yj[yc] * (2 * half_rad));
            r = asin(fmin(sqrt(h), 1.0)) * (2.0 * radius);
        } else {
            double s = 0.0;
            for (int c = 0; c < d; ++c) {
                double dc = xi[c * xc] - yj[c * yc];
                s += dc * dc;
            }
            r = sqrt(s);
        }
        double t = r / beta, v;
        if (FAMILY == EXPONENTIAL || FAMILY == MATERN05) {
            v = exp(-t);
        } else if (FAMILY == MATERN15) {
            v = (t + 1.0) * exp(-t);
        } else if (FAMILY == MATERN25) {
            v = (t * (t * (1.0 / 3.0) + 1.0) + 1.0) * exp(-t);
        } else if (FAMILY == SQEXP) {
            v = exp(t * t * -0.5);
        } else if (FAMILY == POWEXP) {
            v = exp(-pow(t, third));
        } else {
            v = matern::value<NF>(t, o, coef, sub, exact);
        }
        out[i * rs + j * cs] = sigma2 == 1.0 ? v : v * sigma2;
    }
}

}  // namespace tricov
