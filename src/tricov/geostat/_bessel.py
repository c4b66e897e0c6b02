"""The scaled Matérn correlation ``M_nu(t) = 2^(1-nu) / Gamma(nu) * t^nu * K_nu(t)`` for any nu > 0.

``M_nu(0) = 1`` and ``M_nu`` decreases to 0. SciPy's ``kv`` (AMOS, complex arithmetic) costs a few
hundred nanoseconds per element and overflows for small ``t`` and large ``nu``; a covariance
matrix needs ``n^2 / 2`` of them. Here ``M_nu`` is evaluated in compiled loops (Numba, ``nogil``,
so that threads fill tiles side by side), several times faster, without overflow, to a few units
in the last place.

The accurate path (used to build the table, and outside its range). Write ``nu = mu + m`` with
``m = round(nu)`` and ``|mu| <= 1/2``.

1. ``K_mu(t)`` and ``K_{mu+1}(t)``:

   * ``t <= 1.25``: Temme's series. With ``c_k = (t^2/4)^k / k!``,
     ``K_mu = sum c_k f_k`` and ``K_{mu+1} = (2/t) sum c_k (p_k - k f_k)``, where
     ``p_0 = (t/2)^-mu Gamma(1+mu) / 2``, ``q_0 = (t/2)^mu Gamma(1-mu) / 2``,
     ``f_0 = mu pi / sin(mu pi) [cosh(s) G1 + sinh(s)/s * ln(2/t) G2]`` with ``s = mu ln(2/t)``,
     ``G1 = (1/Gamma(1-mu) - 1/Gamma(1+mu)) / (2 mu)``,
     ``G2 = (1/Gamma(1-mu) + 1/Gamma(1+mu)) / 2``, and
     ``f_k = (k f_{k-1} + p_{k-1} + q_{k-1}) / (k^2 - mu^2)``, ``p_k = p_{k-1} / (k - mu)``,
     ``q_k = q_{k-1} / (k + mu)``. ``G1`` and ``G2`` come from the Taylor series of
     ``ln Gamma(1 +- mu)`` (zeta values), free of the cancellation of the quotient at small mu;
     the sums are scaled by ``(t/2)^mu`` so that the powers of t cancel in ``t^nu K_nu``.
   * ``t > 1.25``: ``K_nu(t) = sqrt(pi) (2t)^nu exp(-t) U(nu + 1/2, 2 nu + 1, 2t)``. The
     ``z_k = U(nu + 1/2 + k, ...)`` obey a three-term recurrence whose minimal solution gives
     ``z_1 / z_0`` as a continued fraction, summed by Steed's algorithm; the identity
     ``sum_k C_k z_k = (2t)^(-nu-1/2)`` (``C_k = (nu+1/2)_k (1/2-nu)_k / k!``) normalises it
     (Thompson and Barnett: ``sum C_k z_k / z_0`` accumulates from the same increments).
     Then ``K_mu = sqrt(pi / 2t) exp(-t) / S`` and
     ``K_{mu+1} = K_mu (mu + 1/2 + t + (mu^2 - 1/4) z_1/z_0) / t``.

2. ``M`` at orders ``mu + 1`` and ``mu + 2`` (both positive) from those, then upwards with the
   recurrence of ``K`` rewritten for ``M``::

       M_{a+1}(t) = M_a(t) + t^2 / (4 a (a - 1)) * M_{a-1}(t)

   whose terms are all positive: no cancellation and no overflow at any nu.

3. ``t < 2^-100``: ``M_nu(t) = 1 - Gamma(1-nu)/Gamma(1+nu) (t/2)^(2 nu)`` for ``nu < 1`` (every
   omitted term is below ``1e-60``), and ``M_nu(t) = 1`` to double precision for ``nu >= 1``.

The fast path. For one nu, ``exp(t) M`` (of order nu, or of the two base orders when nu >= 5/2)
is tabulated as Chebyshev series on quarter-octaves of ``[2^-100, 512)``, built from the accurate
path (a few milliseconds, cached per nu). Each piece is analytic (the only singularity is at 0),
so 14 terms reach double precision. An element then costs a ``frexp`` to find its piece, a
Clenshaw sum, one ``exp`` and, for ``nu >= 5/2``, ``m - 2`` steps of the positive recurrence.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit
from scipy.special import gammaln, zeta

from ..kernels import numba as _numba_kernels  # noqa: F401 (drops stale Numba caches first)

__all__ = ["matern_scaled", "matern_scaled_inplace", "orders", "table", "table1_at", "table2_at",
           "exp_neg", "table_row", "tables"]

_EULER = 0.57721566490153286061
_E_MIN = -99           # the table starts at 2^(_E_MIN - 1) = 2^-100
_SMALL = 2.0 ** (_E_MIN - 1)  # below this, the small-argument form is exact in double precision
_TABLE_E = 10          # the table ends at 2^(_TABLE_E - 1) = 512 (beyond: exp(-x) < 1e-222)
_TABLE_MAX = 2.0 ** (_TABLE_E - 1)
_NU_TABLE_MAX = 60.0   # beyond, exp(x) M_nu(x) could overflow inside the table: exact path
_CHEB = 14             # Chebyshev terms per quarter-octave (the 13th is below 1e-16)
_Q1, _Q2, _Q3 = (0.5 * 2.0 ** (k / 4.0) for k in (1, 2, 3))
_TEMME_MAX = 1.25      # Temme's series up to here, the continued fraction beyond
_TEMME_TERMS = 64      # enough for t <= 1.25: c_k < 1e-17 by k = 16
_CF_TERMS = 160       # enough for x > 1.25 (about 125 are used there); C_n stays finite
_EPS = 1e-16
# Constants of one order, packed for the compiled loops (indices into ``consts``).
_MU, _M, _G1, _G2, _GP, _GM, _MPIS, _A0, _A1, _A2, _B0, _B1, _TINYC = range(13)


def _gamma_terms(mu: float) -> tuple[float, float, float, float]:
    """``G1(mu)``, ``G2(mu)``, ``Gamma(1+mu)``, ``Gamma(1-mu)`` for ``|mu| <= 1/2``.

    ``ln Gamma(1-mu) = S + D`` and ``ln Gamma(1+mu) = S - D`` with the even and odd parts
    ``S = sum_{k even >= 2} zeta(k) mu^k / k`` and ``D = mu (gamma + sum_{k odd >= 3}
    zeta(k) mu^(k-1) / k)``; then ``G1 = -exp(-S) sinh(D) / mu`` and ``G2 = exp(-S) cosh(D)``.
    """
    k = np.arange(100, 1, -1)  # smallest terms first
    z = zeta(k.astype(float))
    even, odd = k % 2 == 0, k % 2 == 1
    s = float(np.sum(z[even] * mu ** k[even] / k[even]))
    d_over_mu = _EULER + float(np.sum(z[odd] * mu ** (k[odd] - 1) / k[odd]))
    d = mu * d_over_mu
    sinhc = math.sinh(d) / d if d != 0.0 else 1.0
    g1 = -math.exp(-s) * sinhc * d_over_mu
    g2 = math.exp(-s) * math.cosh(d)
    return g1, g2, math.exp(s - d), math.exp(s + d)


@functools.lru_cache(maxsize=64)
def orders(nu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The constants of order ``nu`` that the compiled loops need (cached per nu).

    Returns
    -------
    consts : (13,) float64
        mu, m, G1, G2, Gamma(1+mu), Gamma(1-mu), mu pi / sin(mu pi); the prefactors
        ``2/Gamma(mu)``, ``2/Gamma(1+mu)``, ``1/(2 Gamma(mu+2))`` (series) and
        ``2^(1-mu)/Gamma(mu)``, ``2^-mu/Gamma(1+mu)`` (continued fraction); and
        ``Gamma(1-nu) / Gamma(1+nu)`` for the small-argument form (0 if nu >= 1).
    temme : (4, _TEMME_TERMS) float64
        Per term k: ``1/(k^2 - mu^2)``, ``1/(k - mu)``, ``1/(k + mu)``, ``1/k`` (k >= 1).
    steed : (2, _CF_TERMS) float64
        Per term n: ``alpha_n = mu^2 - (n - 1/2)^2`` and ``C_n``, the normalising coefficients.
    up : (m,) float64
        ``1 / (4 a (a - 1))`` for the upward steps ``a = mu + 2, ..., nu - 1``.
    """
    nu = float(nu)
    m = math.floor(nu + 0.5)
    mu = nu - m
    g1, g2, gp, gm = _gamma_terms(mu)
    mpis = 1.0 if mu == 0.0 else mu * math.pi / math.sin(mu * math.pi)
    gamma_mu = gp / mu if mu > 0 else math.inf       # Gamma(mu), used only when nu = mu
    tinyc = math.exp(float(gammaln(1.0 - nu) - gammaln(1.0 + nu))) if nu < 1.0 else 0.0
    consts = np.array([mu, m, g1, g2, gp, gm, mpis, 2.0 / gamma_mu, 2.0 / gp,
                       0.5 / ((mu + 1.0) * gp), 2.0 ** (1.0 - mu) / gamma_mu, 2.0 ** -mu / gp,
                       tinyc])

    k = np.arange(_TEMME_TERMS, dtype=float)
    k[0] = 1.0  # term 0 is set up separately; keep its slots finite
    temme = np.stack([1.0 / (k * k - mu * mu), 1.0 / (k - mu), 1.0 / (k + mu), 1.0 / k])

    n = np.arange(_CF_TERMS, dtype=float)
    alpha = mu * mu - (n - 0.5) ** 2
    c = np.zeros(_CF_TERMS)
    c[1] = 0.25 - mu * mu
    for j in range(2, _CF_TERMS):
        c[j] = -c[j - 1] * alpha[j] / j
    steed = np.stack([alpha, c])

    a = mu + 2.0 + np.arange(max(m - 2, 0))
    up = 1.0 / (4.0 * a * (a - 1.0))
    return consts, temme, steed, up


@njit(nogil=True, cache=True)
def _temme_sums(x: float, lx: float, consts: np.ndarray, temme: np.ndarray) -> tuple[float, float]:
    """Temme's series for ``0 < x <= 2``, scaled by ``(x/2)^mu``; ``lx = ln x``.

    Returns ``F = (x/2)^mu sum c_k f_k`` and ``H = (x/2)^mu sum c_k (p_k - k f_k)``, so that
    ``K_mu = (2/x)^mu F`` and ``K_{mu+1} = (2/x)^(mu+1) H``. The scaling cancels the powers of x
    of the leading terms exactly (``(x/2)^mu p_0 = Gamma(1+mu)/2``); only ``(x/2)^(2 mu)``, the
    non-analytic part, is left, and it enters with a weight that vanishes with x.
    """
    mu = consts[_MU]
    l2x = math.log(2.0) - lx
    sigma = mu * l2x
    w2 = math.exp(-2.0 * sigma)                                   # (x/2)^(2 mu)
    shc = -math.expm1(-2.0 * sigma) / (2.0 * sigma) if sigma != 0.0 else 1.0
    f = consts[_MPIS] * (0.5 * (1.0 + w2) * consts[_G1] + shc * l2x * consts[_G2])
    p = 0.5 * consts[_GP]
    q = 0.5 * w2 * consts[_GM]
    y = 0.25 * x * x
    c = 1.0
    s0 = f
    s1 = p
    for k in range(1, _TEMME_TERMS):
        f = (k * f + p + q) * temme[0, k]
        p *= temme[1, k]
        q *= temme[2, k]
        c *= y * temme[3, k]
        d0 = c * f
        d1 = c * (p - k * f)
        s0 += d0
        s1 += d1
        if abs(d0) < _EPS * abs(s0) and abs(d1) < _EPS * abs(s1):
            break
    return s0, s1


@njit(nogil=True, cache=True)
def _k_steed(x: float, consts: np.ndarray, steed: np.ndarray) -> tuple[float, float]:
    """``exp(x) K_mu(x)`` and ``exp(x) K_{mu+1}(x)`` by the continued fraction, for ``x > 2``."""
    mu = consts[_MU]
    b = 2.0 * (1.0 + x)
    d = 1.0 / b
    dh = d
    h = d
    q_prev = 0.0
    q = 1.0
    big_q = steed[1, 1]
    s = 1.0 + dh * big_q
    for n in range(2, _CF_TERMS):
        alpha = steed[0, n]
        q_prev, q = q, (q_prev - b * q) / alpha
        big_q += steed[1, n] * q
        b += 2.0
        d = 1.0 / (b + alpha * d)
        dh = (b * d - 1.0) * dh
        h += dh
        ds = big_q * dh
        s += ds
        if abs(ds) < _EPS * abs(s):
            break
    k0 = math.sqrt(math.pi / (2.0 * x)) / s
    k1 = k0 * (mu + 0.5 + x + (mu * mu - 0.25) * h) / x
    return k0, k1


@njit(nogil=True, cache=True)
def _exact_pair(x: float, lx: float, consts: np.ndarray, temme: np.ndarray,
                steed: np.ndarray) -> tuple[float, float]:
    """``exp(x) M_a(x)`` at the two base orders, for ``x >= 2^-100``; ``lx = ln x``.

    The orders are ``mu`` (second value 0) when ``nu = mu < 1/2``, else ``mu + 1`` and
    ``mu + 2``, using ``K_{mu+2} = K_mu + 2 (mu+1) / x K_{mu+1}``.
    """
    mu = consts[_MU]
    m0 = consts[_M] == 0.0
    if x <= _TEMME_MAX:
        sf, sh = _temme_sums(x, lx, consts, temme)
        ex = math.exp(x)
        if m0:
            return consts[_A0] * sf * ex, 0.0
        h1 = consts[_A1] * sh
        return h1 * ex, (h1 + consts[_A2] * x * x * sf) * ex
    k0, k1 = _k_steed(x, consts, steed)
    if m0:
        return consts[_B0] * x ** mu * k0, 0.0
    pre = consts[_B1] * x ** (mu + 1.0)
    h1 = pre * k1
    return h1, h1 + pre * x * k0 / (2.0 * (mu + 1.0))


@njit(nogil=True, cache=True)
def _upward(x: float, m: int, h_lo: float, h_hi: float, up: np.ndarray) -> float:
    """Order ``nu`` from orders ``mu + 1`` (``h_lo``) and ``mu + 2`` (``h_hi``), ``m >= 2``."""
    x2 = x * x
    for i in range(m - 2):
        h_lo, h_hi = h_hi, h_hi + x2 * up[i] * h_lo
    return h_hi


@njit(nogil=True, cache=True)
def _small(x: float, nu: float, tinyc: float) -> float:
    """``M_nu(x)`` for ``0 <= x < 2^-100``."""
    if tinyc == 0.0:
        return 1.0
    return 1.0 - tinyc * (0.5 * x) ** (2.0 * nu)


@njit(nogil=True, cache=True)
def _exact(x: float, consts: np.ndarray, temme: np.ndarray, steed: np.ndarray,
           up: np.ndarray) -> float:
    """``M_nu(x)`` by the series and the continued fraction (no table); NaN in, NaN out."""
    m = int(consts[_M])
    if x != x:
        return x
    if x < _SMALL:
        return _small(x, consts[_MU] + m, consts[_TINYC])
    if x == math.inf:
        return 0.0
    lx = math.log(x)
    if x > 700.0 and x - (consts[_MU] + m + 1.0) * lx > 760.0:
        return 0.0   # M < 1e-330 (and x^nu might overflow below)
    h_lo, h_hi = _exact_pair(x, lx, consts, temme, steed)
    if m <= 1:
        h = h_lo
    elif m == 2:
        h = h_hi
    else:
        # in M rather than exp(x) M, which could overflow for large x and nu
        e = math.exp(-x)
        return _upward(x, m, h_lo * e, h_hi * e, up)
    return h * math.exp(-x)


@functools.lru_cache(maxsize=32)
def table(nu: float) -> tuple[np.ndarray, np.ndarray]:
    """Chebyshev coefficients of ``H = exp(x) M`` on the pieces of ``[2^-100, 2^(_TABLE_E-1))``.

    The pieces are quarter-octaves ``2^(e-1) [2^(s/4), 2^((s+1)/4)]``; on each, the function is
    analytic (its only singularity is at 0) and ``_CHEB`` Chebyshev terms reach double precision.
    The tabulated functions are ``M_nu`` itself for ``nu < 5/2`` and the two base orders
    ``mu + 1``, ``mu + 2`` beyond (climbed to nu per element by the positive recurrence).

    Returns
    -------
    coef : (pieces, functions, _CHEB) float64
    sub : (2, 4) float64
        Centre and inverse half-width of each quarter-octave in the mantissa ``[1/2, 1)``.
    """
    consts, temme, steed, up = orders(nu)
    m = int(consts[_M])
    nf = 2 if m >= 3 else 1
    lo = 0.5 * 2.0 ** (np.arange(4) / 4.0)
    hi = 0.5 * 2.0 ** (np.arange(1, 5) / 4.0)
    sub = np.stack([(lo + hi) / 2.0, 2.0 / (hi - lo)])
    k = np.arange(_CHEB)
    nodes = np.cos(np.pi * (k + 0.5) / _CHEB)          # first-kind Chebyshev points
    basis = np.cos(np.pi * np.outer(k, k + 0.5) / _CHEB) * (2.0 / _CHEB)
    basis[0] *= 0.5
    octaves = np.arange(_E_MIN, _TABLE_E)
    # mantissa points of every piece, then the arguments x = f 2^e
    f = sub[0][:, None] + nodes[None, :] / sub[1][:, None]          # (4, _CHEB)
    x = np.ldexp(np.broadcast_to(f, (octaves.size, 4, _CHEB)),
                 octaves[:, None, None]).reshape(-1, _CHEB)
    values = np.empty((x.shape[0], nf, _CHEB))
    _tabulate(x, consts, temme, steed, up, values)
    # below x = 1, where H = exp(x) M is close to 1, tabulate H - 1: its absolute error is then
    # far below an ulp of H (elsewhere H may be small, and is tabulated as it is)
    values[: 4 * (1 - _E_MIN)] -= 1.0
    coef = np.ascontiguousarray(np.einsum("pfj,kj->pfk", values, basis))
    return coef, sub


@njit(nogil=True, cache=True)
def _tabulate(x: np.ndarray, consts: np.ndarray, temme: np.ndarray, steed: np.ndarray,
              up: np.ndarray, values: np.ndarray) -> None:
    m = int(consts[_M])
    for p in range(x.shape[0]):
        for j in range(x.shape[1]):
            h_lo, h_hi = _exact_pair(x[p, j], math.log(x[p, j]), consts, temme, steed)
            if values.shape[1] == 2:
                values[p, 0, j] = h_lo
                values[p, 1, j] = h_hi
            else:
                values[p, 0, j] = h_hi if m == 2 else h_lo


# The two table loops below are written out in full (no per-element helper call): inlined,
# an element costs a frexp, a Clenshaw sum and an exp, some 20 ns instead of 70.


@njit(nogil=True, cache=True)
def _fill_table1(t: np.ndarray, coef: np.ndarray, sub: np.ndarray, consts: np.ndarray,
                 temme: np.ndarray, steed: np.ndarray, up: np.ndarray) -> None:
    """``t <- M_nu(t)`` from a table of one function (``nu < 5/2``)."""
    for j in range(t.shape[1]):
        for i in range(t.shape[0]):
            x = t[i, j]
            if not (_SMALL <= x < _TABLE_MAX):
                t[i, j] = _exact(x, consts, temme, steed, up)
                continue
            f, e = math.frexp(x)
            s = (f >= _Q1) + (f >= _Q2) + (f >= _Q3)
            base = ((e - _E_MIN) * 4 + s) * _CHEB
            u2 = 2.0 * (f - sub[0, s]) * sub[1, s]
            b1 = 0.0
            b2 = 0.0
            for k in range(_CHEB - 1, 0, -1):
                b1, b2 = u2 * b1 - b2 + coef[base + k], b1
            off = 1.0 if e <= 0 else 0.0                # see table(): below 1, H - 1 is stored
            t[i, j] = (off + (0.5 * u2 * b1 - b2 + coef[base])) * math.exp(-x)


@njit(nogil=True, cache=True)
def _fill_table2(t: np.ndarray, coef: np.ndarray, sub: np.ndarray, consts: np.ndarray,
                 temme: np.ndarray, steed: np.ndarray, up: np.ndarray) -> None:
    """``t <- M_nu(t)`` from a table of the two base orders, then upwards (``nu >= 5/2``)."""
    m = int(consts[_M])
    for j in range(t.shape[1]):
        for i in range(t.shape[0]):
            x = t[i, j]
            if not (_SMALL <= x < _TABLE_MAX):
                t[i, j] = _exact(x, consts, temme, steed, up)
                continue
            f, e = math.frexp(x)
            s = (f >= _Q1) + (f >= _Q2) + (f >= _Q3)
            base = ((e - _E_MIN) * 4 + s) * 2 * _CHEB
            u2 = 2.0 * (f - sub[0, s]) * sub[1, s]
            b1 = 0.0
            b2 = 0.0
            d1 = 0.0
            d2 = 0.0
            for k in range(_CHEB - 1, 0, -1):
                b1, b2 = u2 * b1 - b2 + coef[base + k], b1
                d1, d2 = u2 * d1 - d2 + coef[base + _CHEB + k], d1
            off = 1.0 if e <= 0 else 0.0
            h_lo = off + (0.5 * u2 * b1 - b2 + coef[base])
            h_hi = off + (0.5 * u2 * d1 - d2 + coef[base + _CHEB])
            t[i, j] = _upward(x, m, h_lo, h_hi, up) * math.exp(-x)


@njit(nogil=True, cache=True)
def _fill_exact(t: np.ndarray, consts: np.ndarray, temme: np.ndarray, steed: np.ndarray,
                up: np.ndarray) -> None:
    for j in range(t.shape[1]):
        for i in range(t.shape[0]):
            t[i, j] = _exact(t[i, j], consts, temme, steed, up)


@njit(nogil=True, inline="always")
def table1_at(x: float, coef: np.ndarray, sub: np.ndarray, consts: np.ndarray,
              temme: np.ndarray, steed: np.ndarray, up: np.ndarray) -> float:
    """``M_nu(x)`` of one element from a one-function table (the loop of ``_fill_table1``)."""
    if not (_SMALL <= x < _TABLE_MAX):
        return _exact(x, consts, temme, steed, up)
    f, e = math.frexp(x)
    s = (f >= _Q1) + (f >= _Q2) + (f >= _Q3)
    base = ((e - _E_MIN) * 4 + s) * _CHEB
    u2 = 2.0 * (f - sub[0, s]) * sub[1, s]
    b1 = 0.0
    b2 = 0.0
    for k in range(_CHEB - 1, 0, -1):
        b1, b2 = u2 * b1 - b2 + coef[base + k], b1
    off = 1.0 if e <= 0 else 0.0
    return (off + (0.5 * u2 * b1 - b2 + coef[base])) * math.exp(-x)


@njit(nogil=True, inline="always")
def table2_at(x: float, coef: np.ndarray, sub: np.ndarray, consts: np.ndarray,
              temme: np.ndarray, steed: np.ndarray, up: np.ndarray) -> float:
    """``M_nu(x)`` of one element from a two-function table (the loop of ``_fill_table2``)."""
    if not (_SMALL <= x < _TABLE_MAX):
        return _exact(x, consts, temme, steed, up)
    f, e = math.frexp(x)
    s = (f >= _Q1) + (f >= _Q2) + (f >= _Q3)
    base = ((e - _E_MIN) * 4 + s) * 2 * _CHEB
    u2 = 2.0 * (f - sub[0, s]) * sub[1, s]
    b1 = 0.0
    b2 = 0.0
    d1 = 0.0
    d2 = 0.0
    for k in range(_CHEB - 1, 0, -1):
        b1, b2 = u2 * b1 - b2 + coef[base + k], b1
        d1, d2 = u2 * d1 - d2 + coef[base + _CHEB + k], d1
    off = 1.0 if e <= 0 else 0.0
    h_lo = off + (0.5 * u2 * b1 - b2 + coef[base])
    h_hi = off + (0.5 * u2 * d1 - d2 + coef[base + _CHEB])
    return _upward(x, int(consts[_M]), h_lo, h_hi, up) * math.exp(-x)


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01   # ln 2 in two parts (Cody and Waite)
_LN2_LO = 1.90821492927058770002e-10
_EXP_MIN = -708.0                      # exp(x) is normal above; below, libm's exp


@njit(nogil=True, cache=True)
def exp_neg(t: np.ndarray, out: np.ndarray) -> None:
    """``out = exp(-t)`` elementwise (1-D arrays), within an ulp of libm's ``exp``.

    ``x = k ln2 + r`` with ``|r| <= ln2 / 2`` (``ln 2`` split in two so that ``r`` is exact),
    ``exp(r)`` by its Taylor polynomial to degree 13 (the remainder is below 5e-18), times
    ``2^k`` written into the exponent bits: no call in the loop, which the compiler vectorizes.
    Arguments beyond ``+-708`` (subnormal, zero or huge results) and NaN go through libm.
    """
    n = t.shape[0]
    kbits = np.empty(n, dtype=np.int64)
    scale = kbits.view(np.float64)
    for e in range(n):
        x = min(max(-t[e], _EXP_MIN), -_EXP_MIN)
        kf = math.floor(x * _LOG2E + 0.5)
        r = (x - kf * _LN2_HI) - kf * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        out[e] = p * r + 1.0
        kbits[e] = (np.int64(kf) + 1023) << 52
    for e in range(n):
        out[e] *= scale[e]
    for e in range(n):
        if not _EXP_MIN <= -t[e] <= -_EXP_MIN:
            out[e] = math.exp(-t[e])


@njit(nogil=True, cache=True)
def table_row(t: np.ndarray, coef: np.ndarray, sub: np.ndarray, consts: np.ndarray,
              temme: np.ndarray, steed: np.ndarray, up: np.ndarray, nf: int) -> None:
    """``t <- M_nu(t)`` for a 1-D array, from a table of ``nf`` functions (1: ``nu < 5/2``).

    The same sums as :func:`table1_at` / :func:`table2_at`, reorganised for many elements: the
    piece of each element from the bits of its argument (no ``frexp`` call), its coefficients
    gathered once into rows by term, then each step of the Clenshaw sums over all elements
    (independent, unit-stride: the compiler vectorizes them, where one element's steps would
    wait on each other), and :func:`exp_neg`. Several times faster per element.
    """
    n = t.shape[0]
    bits = t.view(np.int64)
    mant = np.empty(n, dtype=np.int64)
    fr = mant.view(np.float64)
    for e in range(n):
        # frexp of a positive normal number from its bits: x = f 2^ex, f in [1/2, 1)
        mant[e] = (bits[e] & 0x000FFFFFFFFFFFFF) | 0x3FE0000000000000
    base = np.empty(n, dtype=np.int64)
    u2 = np.empty(n)
    off = np.empty(n)
    stride = nf * _CHEB
    for e in range(n):
        x = t[e]
        if _SMALL <= x < _TABLE_MAX:
            f = fr[e]
            ex = ((bits[e] >> 52) & 0x7FF) - 1022
            s = (f >= _Q1) + (f >= _Q2) + (f >= _Q3)
            base[e] = ((ex - _E_MIN) * 4 + s) * stride
            u2[e] = 2.0 * (f - sub[0, s]) * sub[1, s]
            off[e] = 1.0 if ex <= 0 else 0.0   # see table(): below 1, H - 1 is stored
        else:
            base[e] = -1
            u2[e] = 0.0
            off[e] = 0.0
    cf = np.empty((stride, n))
    for e in range(n):
        c = base[e] if base[e] >= 0 else 0
        for k in range(stride):
            cf[k, e] = coef[c + k]
    h = _clenshaw(cf, 0, u2, off)
    if nf == 2:
        hi = _clenshaw(cf, _CHEB, u2, off)
        m = int(consts[_M])
        for e in range(n):
            h[e] = _upward(t[e], m, h[e], hi[e], up)
    ex = np.empty(n)
    exp_neg(t, ex)
    for e in range(n):
        if base[e] < 0:
            t[e] = _exact(t[e], consts, temme, steed, up)
        else:
            t[e] = h[e] * ex[e]


@njit(nogil=True, cache=True)
def _clenshaw(cf: np.ndarray, first: int, u2: np.ndarray, off: np.ndarray) -> np.ndarray:
    """The Chebyshev sums ``off + sum_k cf[first + k] T_k(u)`` of all elements, step by step."""
    n = u2.shape[0]
    b1 = np.zeros(n)
    b2 = np.zeros(n)
    for k in range(_CHEB - 1, 0, -1):
        ck = cf[first + k]
        for e in range(n):
            v = u2[e] * b1[e] - b2[e] + ck[e]
            b2[e] = b1[e]
            b1[e] = v
    c0 = cf[first]
    h = np.empty(n)
    for e in range(n):
        h[e] = off[e] + (0.5 * u2[e] * b1[e] - b2[e] + c0[e])
    return h


def tables(nu: float) -> tuple[int, tuple[np.ndarray, ...]]:
    """How to evaluate ``M_nu`` element by element: ``(mode, arrays)``.

    ``mode`` is 0 (exact path), 1 (:func:`table1_at`) or 2 (:func:`table2_at`); ``arrays`` is
    ``(coef, sub, consts, temme, steed, up)`` with ``coef`` flattened (the arguments of those
    functions after ``x``; ``coef`` and ``sub`` are placeholders in mode 0).
    """
    consts, temme, steed, up = orders(float(nu))
    if nu > _NU_TABLE_MAX:
        return 0, (np.zeros(1), np.zeros((2, 4)), consts, temme, steed, up)
    coef, sub = table(float(nu))
    return (2 if coef.shape[1] == 2 else 1), (coef.reshape(-1), sub, consts, temme, steed, up)


def matern_scaled_inplace(t: np.ndarray, nu: float, *, exact: bool = False) -> np.ndarray:
    """Overwrite ``t`` by ``M_nu(t)``.

    Parameters
    ----------
    t : float64 NumPy array, 1-D or 2-D
        Scaled distances ``r / beta >= 0``, any strides (F-ordered blocks run fastest). The GIL
        is released, so threads may fill different blocks at once.
    nu : float
        Smoothness, > 0.
    exact : bool
        Evaluate every element by the series and continued fraction instead of the table
        (slower; the table is built from these and agrees to a few units in the last place).

    Returns
    -------
    t
    """
    if t.ndim not in (1, 2):
        raise ValueError(f"t must be 1-D or 2-D, got shape {t.shape}")
    t2 = t[None, :] if t.ndim == 1 else t
    consts, temme, steed, up = orders(float(nu))
    if exact or nu > _NU_TABLE_MAX:
        _fill_exact(t2, consts, temme, steed, up)
        return t
    coef, sub = table(float(nu))
    fill = _fill_table2 if coef.shape[1] == 2 else _fill_table1
    fill(t2, coef.reshape(-1), sub, consts, temme, steed, up)
    return t


def matern_scaled(t: np.ndarray, nu: float, *, exact: bool = False) -> np.ndarray:
    """``M_nu(t)`` as a new float64 array shaped like ``t`` (see :func:`matern_scaled_inplace`)."""
    arr = np.asarray(t, dtype=np.float64)
    out = np.array(arr.reshape(-1), dtype=np.float64, copy=True)
    return matern_scaled_inplace(out, nu, exact=exact).reshape(arr.shape)
