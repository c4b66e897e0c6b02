"""Covariance kernels: Matérn (any smoothness), exponential, squared-exponential, power-exponential.

A :class:`Kernel` is a callable ``kernel(x, y) -> (len(x), len(y))`` block of covariances
between two sets of locations; it never forms more than the block asked for, so tile codes
(dense tiles, tile low-rank compression) call it tile by tile. The families, for a distance
``r`` and ``t = r / beta``:

==============  ===========================  =================================================
family          parameters                   covariance ``C(r)``
==============  ===========================  =================================================
``matern``      sigma2, beta, nu             ``sigma2 2^(1-nu) / Gamma(nu) t^nu K_nu(t)``
``exponential`` sigma2, beta                 ``sigma2 exp(-t)`` (Matérn with nu = 1/2)
``sqexp``       sigma2, beta                 ``sigma2 exp(-t^2 / 2)``
``powexp``      sigma2, beta, alpha          ``sigma2 exp(-t^alpha)``, ``0 < alpha <= 2``
==============  ===========================  =================================================

This is ExaGeoStat's parametrisation of the Matérn kernel (``C(0) = sigma2``; the range is
``beta``, not ``beta sqrt(2 nu)``). An optional ``nugget`` (white-noise variance) is added on the
diagonal of a block whose two sets are the same set (``kernel(x)``, ``kernel(x, x)``, or two
views of the same memory): observations at distinct indices never share it, even at coincident
locations, and a cross-covariance (kriging) never has it. Distances are Euclidean in 1 to 3
dimensions or great-circle on (longitude, latitude) degrees (see :mod:`.distance`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from . import _bessel
from .distance import EARTH_RADIUS_KM, METRICS, array_namespace, distances

__all__ = ["FAMILIES", "Kernel", "exponential", "make_kernel", "matern", "powexp", "sqexp"]

#: Parameter names of each kernel family, in order.
FAMILIES: dict[str, tuple[str, ...]] = {
    "matern": ("sigma2", "beta", "nu"),
    "exponential": ("sigma2", "beta"),
    "sqexp": ("sigma2", "beta"),
    "powexp": ("sigma2", "beta", "alpha"),
}
# Blocks of at least this many elements are filled by several threads (see ``__call__``).
_PARALLEL_MIN = 1 << 18
_ALIASES = {"exp": "exponential", "gaussian": "sqexp", "rbf": "sqexp",
            "squared_exponential": "sqexp", "square_exponential": "sqexp",
            "power_exponential": "powexp"}


def family_name(name: str) -> str:
    """The canonical family of ``name`` (aliases: exp, gaussian, rbf, power_exponential, ...)."""
    if not isinstance(name, str):
        raise TypeError(f"kernel must be a family name or a Kernel, got {type(name).__name__}")
    key = name.lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in FAMILIES:
        raise ValueError(f"kernel must be one of {sorted(FAMILIES)} (or an alias: "
                         f"{sorted(_ALIASES)}), got {name!r}")
    return key


def _address(a: Any) -> int:
    if isinstance(a, np.ndarray):
        return int(a.__array_interface__["data"][0])
    return int(a.data.ptr)  # CuPy


def same_points(x: Any, y: Any) -> bool:
    """Whether ``y`` is the same set of locations as ``x`` (same object or same memory view)."""
    if y is None or y is x:
        return True
    return (type(x) is type(y) and x.shape == y.shape and x.strides == y.strides
            and _address(x) == _address(y))


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


@dataclass(frozen=True)
class Kernel:
    """A stationary isotropic covariance function with its parameters.

    Parameters
    ----------
    family : str
        ``"matern"``, ``"exponential"``, ``"sqexp"`` or ``"powexp"`` (aliases accepted).
    params : tuple of float
        The family's parameters in the order of :data:`FAMILIES` (all > 0; alpha <= 2).
    nugget : float
        White-noise variance on the diagonal of same-set blocks, >= 0.
    metric : {"euclidean", "great_circle"}
    radius : float
        Sphere radius for ``great_circle`` (default the Earth in km).

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.geostat import matern
    >>> k = matern(2.0, 0.5, 1.5)
    >>> k(np.array([[0.0, 0.0]]), np.array([[0.5, 0.0]]))   # 2 (1 + 1) exp(-1)
    array([[1.47151776]])
    """

    family: str
    params: tuple[float, ...]
    nugget: float = 0.0
    metric: str = "euclidean"
    radius: float = EARTH_RADIUS_KM

    def __post_init__(self) -> None:
        family = family_name(self.family)
        names = FAMILIES[family]
        if isinstance(self.params, Mapping):
            params = self.params
            unknown = set(params) - set(names)
            missing = [k for k in names if k not in params]
            if unknown or missing:
                raise ValueError(f"params for {family!r} must have the keys {names}; missing "
                                 f"{missing}, unknown {sorted(unknown)}")
            values = tuple(params[k] for k in names)
        else:
            values = tuple(np.ravel(np.asarray(self.params, dtype=object)))
            if len(values) != len(names):
                raise ValueError(f"{family!r} takes {len(names)} parameters {names}, got "
                                 f"{len(values)}: {self.params!r}")
        values = tuple(_real(v, k) for k, v in zip(names, values, strict=True))
        for k, v in zip(names, values, strict=True):
            if v <= 0:
                raise ValueError(f"{k} must be positive, got {v}")
        if family == "powexp" and values[2] > 2:
            raise ValueError(f"alpha must be in (0, 2] (else the kernel is not positive "
                             f"definite), got {values[2]}")
        nugget = _real(self.nugget, "nugget")
        if nugget < 0:
            raise ValueError(f"nugget must be >= 0, got {nugget}")
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
        radius = _real(self.radius, "radius")
        if radius <= 0:
            raise ValueError(f"radius must be positive, got {radius}")
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "params", values)
        object.__setattr__(self, "nugget", nugget)
        object.__setattr__(self, "radius", radius)

    @property
    def names(self) -> tuple[str, ...]:
        """The parameter names of the family."""
        return FAMILIES[self.family]

    @property
    def sigma2(self) -> float:
        """The variance of the process (``C(0)`` without the nugget)."""
        return self.params[0]

    def param_dict(self) -> dict[str, float]:
        """Parameters by name, the nugget included."""
        return {**dict(zip(self.names, self.params, strict=True)), "nugget": self.nugget}

    def replace(self, **values: float) -> Kernel:
        """A copy with some parameters (by name, ``nugget`` included) changed."""
        current = dict(zip(self.names, self.params, strict=True))
        nugget = values.pop("nugget", self.nugget)
        unknown = set(values) - set(current)
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)} for {self.family!r} "
                             f"(parameters: {self.names})")
        current.update(values)
        return dataclasses.replace(self, params=tuple(current.values()), nugget=nugget)

    # ------------------------------------------------------------------ evaluation

    def __call__(self, x: Any, y: Any = None, *, out: Any = None, order: str = "C") -> Any:
        """The covariance block between the rows of ``x`` (n, d) and ``y`` (m, d).

        Parameters
        ----------
        x : (n, d) float64 array
        y : (m, d) float64 array, optional
            Default ``x``. The nugget is added on the diagonal when ``y`` is ``x`` (or views
            the same memory with the same shape and strides).
        out : (n, m) float64 array, optional
            Written in place, any strides (e.g. a tile of a column-major matrix).
        order : {"C", "F"}
            Layout of the new array when ``out`` is None. C by default, what tile low-rank
            compression takes; both cost the same (a C block is filled as the F-ordered
            transpose ``C(y, x)``).

        Blocks of 2^18 elements or more (panels of several tiles) are filled tile by tile
        on the assembly's threads (:func:`tricov.geostat.covariance.default_workers`).

        Returns
        -------
        (n, m) array
        """
        if not hasattr(x, "ndim"):
            x = np.asarray(x, dtype=np.float64)
        if y is not None and not hasattr(y, "ndim"):
            y = np.asarray(y, dtype=np.float64)
        same = same_points(x, y)
        if y is None:
            y = x
        if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
            raise ValueError(f"x and y must be 2-D with the same number of columns, got shapes "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
        if out is None:
            if order not in ("C", "F"):
                raise ValueError(f"order must be 'C' or 'F', got {order!r}")
            xp = array_namespace(x, y)
            out = xp.empty((x.shape[0], y.shape[0]), dtype=xp.float64, order=order)
        if out.size >= _PARALLEL_MIN and array_namespace(x, y, out) is np:
            from .covariance import covariance, default_workers

            if default_workers() > 1:
                # a large block (a panel of tiles): its tiles on the threads of the assembly
                if abs(out.strides[0]) > abs(out.strides[1]):
                    covariance(self, y, None if same else x, out=out.T)
                else:
                    covariance(self, x, None if same else y, out=out)
                return out
        return self.fill(out, x, y, same=same)

    def fill(self, out: Any, x: Any, y: Any, *, same: bool) -> Any:
        """Write the block ``C(x, y)`` into ``out`` (allocated when None); see ``__call__``.

        A row-major ``out`` is filled as its transpose ``C(y, x)`` (the kernels are symmetric),
        so that the inner loops always run down contiguous columns.
        """
        if out is not None and out.ndim == 2 and out.shape[1] > 1 and out.shape[0] > 1 \
                and abs(out.strides[0]) > abs(out.strides[1]):
            self.fill(out.T, y, x, same=same)
            return out
        xp = array_namespace(x, y, out)
        if xp is not np and (out is None or out.dtype == np.float64) and x.ndim == y.ndim == 2 \
                and (self.metric == "euclidean" or x.shape[1] == y.shape[1] == 2):
            from . import _entries_cuda  # one pass on the GPU, the same operations

            if out is None:
                out = xp.empty((x.shape[0], y.shape[0]), dtype=np.float64, order="F")
            _entries_cuda.fill(out, x, y, self.family, self.params, self.metric, self.radius)
        else:
            out = distances(x, y, metric=self.metric, radius=self.radius, out=out)
            self.correlate(out, xp)
            if self.params[0] != 1.0:
                xp.multiply(out, self.params[0], out=out)
        if same and self.nugget:
            k = xp.arange(min(out.shape))
            out[k, k] += self.nugget
        return out

    def correlate(self, r: Any, xp: ModuleType = np) -> Any:
        """Overwrite distances ``r`` (float64, 1-D or 2-D) by the correlation ``C(r) / sigma2``."""
        beta = self.params[1]
        xp.divide(r, beta, out=r)
        if self.family == "matern":
            _matern_inplace(r, self.params[2], xp)
        elif self.family == "exponential":
            _exp_neg(r, xp)
        elif self.family == "sqexp":
            xp.multiply(r, r, out=r)
            xp.multiply(r, -0.5, out=r)
            xp.exp(r, out=r)
        else:
            xp.power(r, self.params[2], out=r)
            _exp_neg(r, xp)
        return r

    def compiled(self) -> tuple[int, np.ndarray, np.ndarray, float]:
        """The kernel as a compiled block function, for compiled tile codes (CPU TLR).

        Returns
        -------
        fn : int
            Address of a C callback with the signature
            :data:`tricov.kernels.numba.tiles.BLOCK_SIGNATURE`: it writes the covariances of
            a block of pairs of locations, without the nugget (compiled on first use and
            cached on disk).
        p, tab : float64 arrays
            The family and parameters, and the Matérn tables, that ``fn`` takes.
        nugget : float
            What a same-set block adds on its diagonal (``i == j``).
        """
        from . import _entries

        self.prepare()
        p, tab = _entries.pack(self.family, self.params, self.metric, self.radius)
        return _entries.block_address(), p, tab, self.nugget

    def prepare(self) -> None:
        """Build what evaluation needs once per parameter set (the Matérn table for this nu)."""
        if self.family == "matern" and _general_nu(self.params[2]) \
                and self.params[2] <= _bessel._NU_TABLE_MAX:
            _bessel.table(self.params[2])


def _exp_neg(t: Any, xp: ModuleType) -> None:
    xp.negative(t, out=t)
    xp.exp(t, out=t)


def _general_nu(nu: float) -> bool:
    return nu not in (0.5, 1.5, 2.5)


def _matern_inplace(t: Any, nu: float, xp: ModuleType) -> None:
    """``t <- M_nu(t)``: closed forms at nu = 1/2, 3/2, 5/2, else the compiled Bessel path."""
    if not _general_nu(nu):
        e = xp.negative(t)
        xp.exp(e, out=e)
        if nu == 1.5:          # (1 + t) e^-t
            xp.add(t, 1.0, out=t)
        elif nu == 2.5:        # (1 + t + t^2/3) e^-t = (t (t/3 + 1) + 1) e^-t
            w = xp.multiply(t, 1.0 / 3.0)
            xp.add(w, 1.0, out=w)
            xp.multiply(t, w, out=t)
            xp.add(t, 1.0, out=t)
        else:
            t[...] = 1.0
        xp.multiply(t, e, out=t)
        return
    if xp is not np:
        from . import _bessel_cuda

        _bessel_cuda.matern_scaled_inplace(t, nu)
        return
    _bessel.matern_scaled_inplace(t, nu)


# ---------------------------------------------------------------------- constructors


def matern(sigma2: float = 1.0, beta: float = 0.1, nu: float = 0.5, *, nugget: float = 0.0,
           metric: str = "euclidean", radius: float = EARTH_RADIUS_KM) -> Kernel:
    """The Matérn kernel ``sigma2 2^(1-nu)/Gamma(nu) (r/beta)^nu K_nu(r/beta)`` (any nu > 0).

    Closed forms at ``nu`` = 1/2, 3/2, 5/2: ``exp(-t)``, ``(1+t) exp(-t)``,
    ``(1 + t + t^2/3) exp(-t)`` with ``t = r / beta``.
    """
    return Kernel("matern", (sigma2, beta, nu), nugget, metric, radius)


def exponential(sigma2: float = 1.0, beta: float = 0.1, *, nugget: float = 0.0,
                metric: str = "euclidean", radius: float = EARTH_RADIUS_KM) -> Kernel:
    """The exponential kernel ``sigma2 exp(-r / beta)``."""
    return Kernel("exponential", (sigma2, beta), nugget, metric, radius)


def sqexp(sigma2: float = 1.0, beta: float = 0.1, *, nugget: float = 0.0,
          metric: str = "euclidean", radius: float = EARTH_RADIUS_KM) -> Kernel:
    """The squared-exponential (Gaussian) kernel ``sigma2 exp(-r^2 / (2 beta^2))``."""
    return Kernel("sqexp", (sigma2, beta), nugget, metric, radius)


def powexp(sigma2: float = 1.0, beta: float = 0.1, alpha: float = 1.0, *, nugget: float = 0.0,
           metric: str = "euclidean", radius: float = EARTH_RADIUS_KM) -> Kernel:
    """The power-exponential kernel ``sigma2 exp(-(r / beta)^alpha)``, ``0 < alpha <= 2``."""
    return Kernel("powexp", (sigma2, beta, alpha), nugget, metric, radius)


def make_kernel(kernel: str | Kernel, params: Sequence[float] | Mapping[str, float] | None,
                *, nugget: float = 0.0, metric: str = "euclidean",
                radius: float = EARTH_RADIUS_KM) -> Kernel:
    """A :class:`Kernel` from a family name and parameters, or ``kernel`` itself.

    Parameters
    ----------
    kernel : str or Kernel
        A family name (then ``params`` is required) or a ready kernel (then ``params`` must be
        None, and ``nugget``, ``metric``, ``radius`` are those of the kernel).
    params : sequence or mapping, optional
        The family's parameters in order, or by name.
    """
    if isinstance(kernel, Kernel):
        if params is not None:
            raise ValueError("pass params either inside the Kernel or with a family name, "
                             "not both")
        return kernel
    if params is None:
        raise ValueError(f"params are required with kernel={kernel!r}: "
                         f"{FAMILIES[family_name(kernel)]}")
    return Kernel(kernel, params, nugget, metric, radius)
