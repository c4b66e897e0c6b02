"""Maximum-likelihood estimation of kernel parameters with a bounded derivative-free optimizer.

The optimizer works on the logarithms of the free parameters (all positive), inside bounds.
The default, SciPy's COBYQA, is a derivative-free trust-region method that models the
objective by quadratic interpolation, the family of Powell's BOBYQA that ExaGeoStat uses: on a
smooth, expensive likelihood it needs markedly fewer evaluations than Powell's line searches or
Nelder-Mead's simplex, which are also offered.

With the nugget fixed at 0 and ``sigma2`` free, the variance is profiled out: for a correlation
matrix R, ``C = sigma2 R`` and the likelihood is maximised in closed form by
``sigma2 = z^T R^-1 z / n`` (clipped to its bounds), so the search runs over one dimension fewer
(beta, nu) and reaches the same maximum with fewer evaluations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy.optimize import Bounds, minimize

from .._errors import NotPositiveDefiniteError
from . import _checks
from .distance import EARTH_RADIUS_KM
from .kernels import FAMILIES, Kernel, family_name
from .likelihood import DEFAULT_TOL, Terms, evaluator

__all__ = ["OPTIMIZERS", "Evaluation", "FitResult", "default_bounds", "fit"]

#: Optimizers: SciPy method names.
OPTIMIZERS = {"cobyqa": "COBYQA", "powell": "Powell", "nelder-mead": "Nelder-Mead"}


@dataclass(frozen=True)
class Evaluation:
    """One likelihood evaluation of a fit."""

    params: dict[str, float]
    loglik: float
    seconds: float


@dataclass
class FitResult:
    """The outcome of :func:`fit`.

    Attributes
    ----------
    params : dict
        Every parameter by name (estimated and fixed, the nugget included).
    loglik : float
        The largest log-likelihood found.
    kernel : Kernel
        The kernel at ``params`` (ready for :func:`predict`).
    free : tuple of str
        The estimated parameters.
    method, optimizer : str
    n : int
        Number of observations.
    n_evals : int
        Likelihood evaluations (failed factorizations included).
    success : bool
        Whether the optimizer reports convergence.
    message : str
    time_total : float
        Seconds, setup included.
    time_per_eval : float
        Mean seconds per likelihood evaluation.
    history : list of Evaluation
    """

    params: dict[str, float]
    loglik: float
    kernel: Kernel
    free: tuple[str, ...]
    method: str
    optimizer: str
    n: int
    n_evals: int
    success: bool
    message: str
    time_total: float
    time_per_eval: float
    history: list[Evaluation] = field(repr=False, default_factory=list)

    def table(self, truth: Mapping[str, float] | None = None) -> Table:
        """A Rich table of the estimates (beside ``truth`` when given)."""
        t = Table(title=f"{self.kernel.family} fit ({self.method}, n={self.n})")
        t.add_column("parameter")
        if truth is not None:
            t.add_column("true", justify="right")
        t.add_column("estimate", justify="right")
        for name, value in self.params.items():
            mark = "" if name in self.free else " (fixed)"
            row = [name + mark]
            if truth is not None:
                row.append(f"{truth[name]:.6g}" if name in truth else "")
            t.add_row(*row, f"{value:.6g}")
        t.add_section()
        t.add_row("log-likelihood", *([""] if truth is not None else []), f"{self.loglik:.6f}")
        t.add_row("evaluations", *([""] if truth is not None else []), str(self.n_evals))
        t.add_row("seconds / evaluation", *([""] if truth is not None else []),
                  f"{self.time_per_eval:.3g}")
        t.add_row("seconds in all", *([""] if truth is not None else []),
                  f"{self.time_total:.3g}")
        return t


def _extent(x: np.ndarray, metric: str, radius: float) -> float:
    """A length scale of the domain: the bounding-box diagonal (great-circle for lon/lat)."""
    span = x.max(axis=0) - x.min(axis=0)
    if metric == "great_circle":
        diag = math.radians(math.hypot(span[0], span[1]))
        return radius * min(diag, math.pi) or radius * 1e-3
    return float(np.hypot.reduce(span)) or 1.0


def default_bounds(family: str, x: np.ndarray, z: np.ndarray, *, metric: str = "euclidean",
                   radius: float = EARTH_RADIUS_KM) -> dict[str, tuple[float, float]]:
    """Wide default bounds from the data: variance around ``mean(z^2)``, range around the
    domain's size, smoothness in [0.05, 4], power in [0.05, 2]."""
    var = float(np.mean(z * z)) or 1.0
    extent = _extent(x, metric, radius)
    bounds = {"sigma2": (var * 1e-3, var * 1e3), "beta": (extent * 1e-4, extent * 10.0),
              "nu": (0.05, 4.0), "alpha": (0.05, 2.0), "nugget": (var * 1e-6, var * 10.0)}
    return {k: bounds[k] for k in (*FAMILIES[family_name(family)], "nugget")}


def _default_start(bounds: Mapping[str, tuple[float, float]], x: np.ndarray, z: np.ndarray,
                   metric: str, radius: float) -> dict[str, float]:
    var = float(np.mean(z * z)) or 1.0
    start = {"sigma2": var, "beta": _extent(x, metric, radius) / 10.0, "nu": 1.0,
             "alpha": 1.0, "nugget": 0.1 * var}
    return {k: min(max(start[k], lo), hi) for k, (lo, hi) in bounds.items()}


class _Progress:
    """One line per evaluation on a Rich console: parameters, log-likelihood, seconds."""

    def __init__(self, enabled: bool, console: Console | None, names: tuple[str, ...]) -> None:
        self.enabled = enabled
        self.console = console or Console()
        self.names = names
        self.best = -math.inf

    def header(self, text: str) -> None:
        if self.enabled:
            self.console.print(f"[bold]{text}[/bold]")
            cols = " ".join(f"{n:>10}" for n in self.names)
            self.console.print(f"[dim]{'eval':>5} {cols} {'loglik':>16} {'seconds':>8}[/dim]",
                               soft_wrap=True)

    def row(self, i: int, params: Mapping[str, float], ll: float, seconds: float) -> None:
        if not self.enabled:
            return
        vals = " ".join(f"{params[n]:10.4g}" for n in self.names)
        better = ll > self.best
        self.best = max(self.best, ll)
        style = "green" if better else ("red" if not math.isfinite(ll) else "")
        text = f"{i:5d} {vals} {ll:16.6f} {seconds:8.3f}"
        self.console.print(f"[{style}]{text}[/{style}]" if style else text, highlight=False,
                           soft_wrap=True)


def _check_names(mapping: Mapping[str, Any] | None, allowed: tuple[str, ...],
                 what: str) -> dict[str, Any]:
    out = dict(mapping or {})
    unknown = set(out) - set(allowed)
    if unknown:
        raise ValueError(f"{what} has unknown parameters {sorted(unknown)}; the parameters are "
                         f"{allowed}")
    return out


def fit(locations: Any, z: Any, *, kernel: str = "matern",
        bounds: Mapping[str, tuple[float, float]] | None = None,
        x0: Mapping[str, float] | None = None, fix: Mapping[str, float] | None = None,
        nugget: float | None = 0.0, metric: str = "euclidean", radius: float = EARTH_RADIUS_KM,
        method: str = "dense", tol: float = DEFAULT_TOL, tile_size: int | None = None,
        workers: int | None = None, device: str = "cpu", optimizer: str = "cobyqa",
        xtol: float = 1e-4,
        max_evals: int = 400, profile: bool = True, progress: bool = True,
        console: Console | None = None) -> FitResult:
    """Maximum-likelihood estimates of a kernel's parameters from observations.

    Parameters
    ----------
    locations : (n, d) array
    z : (n,) array
        Zero-mean observations.
    kernel : str
        Family: "matern" (sigma2, beta, nu), "exponential", "sqexp" (sigma2, beta), "powexp"
        (sigma2, beta, alpha).
    bounds : mapping, optional
        ``{name: (low, high)}`` with ``0 < low < high``; others from :func:`default_bounds`.
    x0 : mapping, optional
        Starting values by name (inside the bounds); others: variance ``mean(z^2)``, range a
        tenth of the domain, nu = 1, alpha = 1, nugget a tenth of the variance.
    fix : mapping, optional
        Kernel parameters held fixed, ``{name: value}``.
    nugget : float or None
        The nugget's fixed value (default 0), or None to estimate it.
    metric, radius
        Distance (see :class:`Kernel`).
    method : {"dense", "tlr"}
    tol : float
        TLR compression accuracy.
    tile_size, workers
        Tile size and assembly threads.
    device : {"cpu", "gpu"}
        Evaluate the likelihood on the CPU, or on CuPy's current GPU.
    optimizer : {"cobyqa", "powell", "nelder-mead"}
    xtol : float
        Convergence tolerance on the log-parameters (about the relative accuracy of the
        estimates): the final trust radius of COBYQA, ``xtol``/``xatol`` of the others.
    max_evals : int
        Most likelihood evaluations.
    profile : bool
        Profile ``sigma2`` out when it is free and the nugget is fixed at 0 (see the module).
    progress : bool
        Print a line per evaluation (Rich).
    console : rich.console.Console, optional
        Where to print.

    Returns
    -------
    FitResult

    Examples
    --------
    >>> from tricov.geostat import simulate, fit
    >>> x, z = simulate(400, (1.0, 0.1, 0.5), seed=3)
    >>> res = fit(x, z, fix={"nu": 0.5}, progress=False)
    >>> sorted(res.params)
    ['beta', 'nu', 'nugget', 'sigma2']
    """
    t_start = time.perf_counter()
    family = family_name(kernel)
    names = FAMILIES[family]
    all_names = (*names, "nugget")
    x = _checks.locations(locations, metric=metric)
    zz = _checks.observations(z, x.shape[0])
    if "nugget" in (fix or {}):
        raise ValueError("fix the nugget with nugget=VALUE (nugget=None estimates it)")
    fixed = _check_names(fix, names, "fix")
    if nugget is not None:
        fixed["nugget"] = nugget
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {tuple(OPTIMIZERS)}, got {optimizer!r}")
    if not xtol > 0:
        raise ValueError(f"xtol must be positive, got {xtol}")
    if int(max_evals) < 1:
        raise ValueError(f"max_evals must be positive, got {max_evals}")
    # a Kernel at the fixed values validates them (and the metric) now
    Kernel(family, {k: fixed.get(k, 1.0) for k in names}, fixed.get("nugget", 0.0), metric,
           radius)

    bnds = default_bounds(family, x, zz, metric=metric, radius=radius)
    for k, b in _check_names(bounds, all_names, "bounds").items():
        lo, hi = (float(v) for v in b)
        if not (0 < lo < hi and math.isfinite(hi)):
            raise ValueError(f"bounds[{k!r}] must be (low, high) with 0 < low < high, got {b}")
        bnds[k] = (lo, hi)
    start = _default_start(bnds, x, zz, metric, radius)
    for k, v in _check_names(x0, all_names, "x0").items():
        lo, hi = bnds[k]
        if not lo <= float(v) <= hi:
            raise ValueError(f"x0[{k!r}] = {v} is outside its bounds {bnds[k]}")
        start[k] = float(v)
    free = tuple(k for k in all_names if k not in fixed)
    if fixed.get("nugget", None) == 0.0:
        _checks.no_duplicates(x, 0.0)
    profiled = profile and "sigma2" in free and fixed.get("nugget", None) == 0.0
    searched = tuple(k for k in free if not (profiled and k == "sigma2"))

    ev = evaluator(method, x, zz, tile_size=tile_size, tol=tol, workers=workers, device=device)
    show = _Progress(progress, console, all_names)
    show.header(f"Maximum likelihood: {family} kernel, n={x.shape[0]}, {method} on {device}, "
                f"free {', '.join(free) or 'none'}"
                + (" (sigma2 profiled)" if profiled else ""))
    history: list[Evaluation] = []
    best: dict[str, Any] = {"ll": -math.inf, "params": None}

    def params_of(u: np.ndarray) -> dict[str, float]:
        p = dict(fixed)
        for k, v in zip(searched, u, strict=True):
            lo, hi = bnds[k]
            p[k] = min(max(math.exp(v), lo), hi)
        if profiled:
            p["sigma2"] = 1.0
        return {k: p[k] for k in all_names}

    def objective(u: np.ndarray) -> float:
        p = params_of(np.asarray(u, dtype=float))
        t0 = time.perf_counter()
        try:
            kern = Kernel(family, {k: p[k] for k in names}, p["nugget"], metric, radius)
            terms = ev(kern)
            ll = _finish(terms, p, profiled, bnds["sigma2"])
        except NotPositiveDefiniteError:
            ll = -math.inf
        dt = time.perf_counter() - t0
        history.append(Evaluation(dict(p), ll, dt))
        show.row(len(history), p, ll, dt)
        if ll > best["ll"]:
            best.update(ll=ll, params=dict(p))
        if math.isfinite(ll):
            return -ll
        return 1e6 * (1.0 + abs(best["ll"])) if math.isfinite(best["ll"]) else 1e30

    u0 = np.array([math.log(start[k]) for k in searched])
    lb = np.array([math.log(bnds[k][0]) for k in searched])
    ub = np.array([math.log(bnds[k][1]) for k in searched])
    if searched:
        res = _minimize(objective, u0, lb, ub, optimizer, xtol, int(max_evals))
        success, message = bool(res.success), str(res.message)
    else:
        objective(u0)
        success, message = True, "nothing to optimise: one evaluation"
    ev.release()
    if best["params"] is None:
        raise NotPositiveDefiniteError(
            1, message="the covariance matrix was not positive definite at any parameters "
            "tried; add a nugget (nugget=None estimates it) or narrow the bounds")
    params = best["params"]
    kern = Kernel(family, {k: params[k] for k in names}, params["nugget"], metric, radius)
    total = time.perf_counter() - t_start
    result = FitResult(params=params, loglik=best["ll"], kernel=kern, free=free, method=method,
                       optimizer=optimizer, n=x.shape[0], n_evals=len(history),
                       success=success, message=message, time_total=total,
                       time_per_eval=float(np.mean([h.seconds for h in history])),
                       history=history)
    if progress:
        show.console.print(result.table())
    return result


def _finish(terms: Terms, p: dict[str, float], profiled: bool,
            sigma2_bounds: tuple[float, float]) -> float:
    """The log-likelihood of evaluated terms; with profiling, sets ``p['sigma2']`` first."""
    if not profiled:
        return terms.loglik()
    lo, hi = sigma2_bounds
    p["sigma2"] = min(max(terms.quad / terms.n, lo), hi)
    return terms.loglik(p["sigma2"])


def _minimize(objective: Callable[[np.ndarray], float], u0: np.ndarray, lb: np.ndarray,
              ub: np.ndarray, optimizer: str, xtol: float, max_evals: int) -> Any:
    method = OPTIMIZERS[optimizer]
    bounds = Bounds(lb, ub)
    if optimizer == "cobyqa":
        radius0 = float(min(1.0, 0.25 * np.min(ub - lb)))
        options = {"maxfev": max_evals, "initial_tr_radius": radius0,
                   "final_tr_radius": min(xtol, radius0), "disp": False}
    elif optimizer == "powell":
        options = {"maxfev": max_evals, "xtol": xtol, "ftol": 1e-10}
    else:
        options = {"maxfev": max_evals, "xatol": xtol, "fatol": 1e-8}
    return minimize(objective, u0, method=method, bounds=bounds, options=options)
