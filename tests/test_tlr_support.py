"""Test helpers for the TLR tests (covariance kernels, point sets, reference bounds), and tests
of the helpers themselves.

Kernels are written here, not taken from ``tricov.geostat``: closed forms of the exponential,
squared-exponential and Matérn (nu = 1.5, 2.5) covariances.

Accuracy bounds used by the TLR tests (derivation). A TLR factor satisfies ``L L^H = A + E``
with ``||E||_F <= delta ||A||_F``; ``delta`` is ``tol`` for the DL mode and ``2 tol`` for the LL
mode (see ``tricov.tlr.cholesky``), plus rounding (``slack``). Then, with ``||E||_2 <=
||E||_F``:

- solve: ``x^ = (A + E)^-1 b``; with ``eta = ||E||_2 / ||A||_2 <= delta ||A||_F / ||A||_2``
  and ``kappa = cond_2(A)``, the standard perturbation bound gives
  ``||x^ - x|| / ||x|| <= kappa eta / (1 - kappa eta)``;
- logdet: ``logdet(A + E) - logdet(A) = sum log(1 + mu_i)``, ``mu_i`` the eigenvalues of
  ``A^-1/2 E A^-1/2``, ``|mu_i| <= rho = ||A^-1||_2 ||E||_2 < 1``, and ``|log(1 + mu)| <=
  |mu| / (1 - rho)``, so ``|error| <= sum |mu_i| / (1 - rho) <= sqrt(n) ||A^-1||_2 ||E||_F /
  (1 - rho)`` (nuclear norm <= sqrt(n) Frobenius norm).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special
from scipy.spatial.distance import cdist

from tricov.tlr import morton_order


def jittered_grid(n: int, dim: int = 2, seed: int = 0, jitter: float = 0.4) -> np.ndarray:
    """``n`` points of a grid in the unit cube, each moved by up to ``jitter`` spacings, in
    Morton order."""
    rng = np.random.default_rng(seed)
    side = math.ceil(n ** (1.0 / dim) - 1e-9)
    axes = np.meshgrid(*[np.arange(side, dtype=float)] * dim, indexing="ij")
    pts = np.stack(axes, axis=-1).reshape(-1, dim)[:n]
    pts = (pts + 0.5 + jitter * rng.uniform(-1, 1, pts.shape)) / side
    return pts[morton_order(pts)]


def exponential(length: float = 0.1):
    def k(x, y):
        return np.exp(-cdist(x, y) / length)
    return k


def sqexp(length: float = 0.1):
    def k(x, y):
        return np.exp(-0.5 * cdist(x, y, "sqeuclidean") / length ** 2)
    return k


def matern15(length: float = 0.1):
    def k(x, y):
        s = math.sqrt(3.0) * cdist(x, y) / length
        return (1.0 + s) * np.exp(-s)
    return k


def matern25(length: float = 0.1):
    def k(x, y):
        s = math.sqrt(5.0) * cdist(x, y) / length
        return (1.0 + s + s * s / 3.0) * np.exp(-s)
    return k


KERNELS = {"exponential": exponential, "sqexp": sqexp, "matern15": matern15,
           "matern25": matern25}


def kernel_matrix(kernel, pts: np.ndarray, nugget: float = 0.0) -> np.ndarray:
    A = kernel(pts, pts)
    A[np.diag_indices_from(A)] += nugget
    return A


def decay_matrix(n: int, seed: int = 0, rate: float = 0.5, dtype=np.float64) -> np.ndarray:
    """Randomized Hermitian positive definite matrix with exponentially decaying spectrum
    ``exp(-rate k)`` plus ``1e-3`` on the diagonal: every tile has numerical rank about
    ``log(1/tol) / rate``."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        g = g + 1j * rng.standard_normal((n, n))
    q, _ = np.linalg.qr(g)
    lam = np.exp(-rate * np.arange(n))
    A = (q * lam) @ q.conj().T + 1e-3 * np.eye(n)
    return ((A + A.conj().T) / 2).astype(dtype)


def fro_error(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.linalg.norm(A - B) / np.linalg.norm(A))


def slack(n: int, dtype) -> float:
    """Rounding allowance added to relative accuracy bounds: ``4 n eps``."""
    return 4.0 * n * float(np.finfo(np.dtype(dtype)).eps)


def solve_bound(A: np.ndarray, delta: float) -> float:
    """Relative solve error bound for ``||E||_F <= delta ||A||_F`` (module notes)."""
    s = np.linalg.svd(A, compute_uv=False)
    kappa = s[0] / s[-1]
    eta = delta * np.linalg.norm(A) / s[0]
    assert kappa * eta < 0.5, "test matrix too ill-conditioned for a meaningful bound"
    return kappa * eta / (1 - kappa * eta)


def logdet_bound(A: np.ndarray, delta: float) -> float:
    """Absolute logdet error bound for ``||E||_F <= delta ||A||_F`` (module notes)."""
    s = np.linalg.svd(A, compute_uv=False)
    e_f = delta * np.linalg.norm(A)
    rho = e_f / s[-1]
    assert rho < 0.5, "test matrix too ill-conditioned for a meaningful bound"
    return math.sqrt(A.shape[0]) * e_f / s[-1] / (1 - rho)


# ------------------------------------------------------------------ tests of the helpers
def _matern_general(d: np.ndarray, nu: float, length: float) -> np.ndarray:
    s = np.sqrt(2 * nu) * d / length
    out = np.ones_like(s)
    pos = s > 0
    out[pos] = 2 ** (1 - nu) / scipy.special.gamma(nu) * s[pos] ** nu * scipy.special.kv(
        nu, s[pos])
    return out


@pytest.mark.parametrize("nu,kernel", [(0.5, exponential), (1.5, matern15), (2.5, matern25)])
def test_matern_closed_forms_match_bessel_formula(nu, kernel):
    x = np.random.default_rng(1).random((40, 2))
    ref = _matern_general(cdist(x, x), nu, 0.3)
    np.testing.assert_allclose(kernel(0.3)(x, x), ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_are_symmetric_positive_semidefinite(name):
    x = jittered_grid(200, 2)
    A = KERNELS[name](0.2)(x, x)
    np.testing.assert_allclose(A, A.T, rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(A).min() > -1e-12 * np.linalg.norm(A, 2)


def test_decay_matrix_spectrum():
    A = decay_matrix(64, rate=0.5)
    w = np.sort(np.linalg.eigvalsh(A))[::-1]
    np.testing.assert_allclose(w[:5] - 1e-3, np.exp(-0.5 * np.arange(5)), rtol=1e-10)


def test_jittered_grid_spacing():
    x = jittered_grid(400, 2, jitter=0.4)
    d = cdist(x, x) + np.eye(400)
    assert d.min() >= 0.2 / 20 - 1e-12
    assert x.min() > 0 and x.max() < 1
