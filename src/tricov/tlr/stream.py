"""Host-resident TLR matrices computed on the GPU: tiles in host memory, streamed to the device.

A :class:`~tricov.tlr.TLRMatrix` built with ``storage='host'`` keeps its dense diagonal tiles
and its ``U``/``V`` factors as NumPy arrays in page-locked host memory, while construction and
factorization run on the GPU. It is for factors larger than the GPU's memory: the device holds
a bounded working set, never all tiles.

>>> import cupy as cp                                            # doctest: +SKIP
>>> from tricov import tlr
>>> from tricov.geostat import matern
>>> x = cp.asarray(points_in_morton_order)                       # doctest: +SKIP
>>> F = tlr.potrf_from_kernel(matern(1.0, 0.1, 0.5), x, tile_size=2048, tol=1e-8,
...                           storage="host", device_memory=8 << 30)  # doctest: +SKIP
>>> F.storage, F.transfer_stats["device_peak_bytes"] <= 8 << 30  # doctest: +SKIP
('host', True)
>>> z = F.solve(b); ld = F.logdet()                              # doctest: +SKIP

The same in two steps: ``T = TLRMatrix.from_kernel(..., storage='host')`` then
``tlr.potrf(T, device_memory=...)``; a host-stored matrix remembers that it computes on the GPU,
so :func:`~tricov.tlr.potrf` streams it without being told.

Construction (:meth:`~tricov.tlr.TLRMatrix.from_kernel`, :meth:`~tricov.tlr.TLRMatrix.from_dense`)
generates and compresses tiles on the device panel by panel, as for device storage, and copies
each finished tile to the host on a side stream (the copy overlaps the next panel's work).

Factorization (:func:`~tricov.tlr.potrf` of a host-stored matrix, and
:func:`~tricov.tlr.potrf_from_kernel` / :func:`~tricov.tlr.potrf_from_dense` with
``storage='host'``): the left-looking algorithm of :mod:`tricov.tlr.cholesky`, streamed. For tile
column ``k`` the device holds the diagonal tile and row ``k`` of the factor (``U_kj``, ``V_kj``,
``j < k``), then the tiles below in chunks: for each tile row ``i`` of a chunk the factors
``U_ij``, ``V_ij`` (``j < k``) are uploaded one row at a time and reduced at once to the block
``X_i = [U_ij (V_ij^H V_kj)]_j``; the Schur tiles ``A_ik - X_i W^H`` of the chunk (``A_ik``
generated on the device in mode DL, uploaded in mode LL) are compressed and solved with
``L_kk``, and the new factors are copied to the host on the side stream. The chunks are the
ones of the device algorithm, split further so that each fits the budget; with a budget large
enough for the device algorithm's chunks the streamed factor is the device factor (same random
draws, same rounding up to the order of operations).

Device memory. ``device_memory`` (bytes as an int, or a float in (0, 1]: that fraction of the
free device memory; default 0.8 of it) bounds what the factorization holds on the device as it
accounts it: the tiles, panels and products it keeps, tiles still being copied to the host, and
an estimate of the compression workspace of each tile (from the rank of a neighbouring tile);
the kernel's own temporaries are counted as one more panel. CuPy's allocator cache and cuBLAS /
cuSOLVER workspaces come on top. A budget too small for one tile column (the diagonal tile, row
``k``'s factors and one tile of the column with its workspace) raises ``ValueError`` naming
``device_memory`` (before any work when even one dense tile does not fit).

Caching. Tiles of the factor that fit in the budget (up to :data:`CACHE_SHARE` of it) stay
resident after their first upload or their computation, and are reused by later columns instead
of copied again; when the working set needs room the most recently used are dropped first (the
tiles are read in the same order at every column, a cyclic scan, for which that is the best
choice), and tiles of rows already passed are dropped as soon as they are dead.
:attr:`~tricov.tlr.TLRMatrix.transfer_stats` reports the traffic and the peak.

Solves, products and log-determinants of a host-stored matrix run on the host (NumPy), reading
the tiles in place (see :meth:`~tricov.tlr.TLRMatrix.solve`).

With NumPy inputs, ``storage='host'`` runs the same streamed algorithm with NumPy standing in
for the device (copies counted as transfers): it gains nothing on a CPU and exists to test the
streaming logic without a GPU.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from types import ModuleType
from typing import Any

import numpy as np

from .. import dense
from ._array import array_module, fro2, herm
from ._progress import Progress
from .build import chunk_hint, rank_hints, tile_atol
from .cholesky import _factor_diag, _LowRankStack, _Schur
from .compression import DenseStack, compress_op
from .matrix import TLRMatrix
from .sources import TileSource, panel_chunks

__all__ = ["CACHE_SHARE", "DEFAULT_FRACTION", "STORAGES", "CupyDevice", "Device", "NumpyDevice",
           "device_for", "left_looking", "resolve_budget"]

#: Values of the ``storage`` keyword.
STORAGES = ("device", "host")
#: Default budget: this fraction of the free device memory.
DEFAULT_FRACTION = 0.8
#: Largest share of the budget that cached tiles may take.
CACHE_SHARE = 0.8
#: Samples beyond twice a tile's expected rank assumed by the workspace estimate.
_EXTRA = 48
#: Largest number of ``V`` columns solved in one TRSM.
_TRSM_COLUMNS = 8192


# ---------------------------------------------------------------------------- devices
class Device:
    """Where a host-stored TLR matrix computes, and its counted copies to and from the host.

    Attributes
    ----------
    xp : module
        The array module that computes (CuPy, or NumPy as a stand-in).
    stats : dict
        ``h2d_bytes``, ``d2h_bytes``, ``h2d_copies``, ``d2h_copies`` (cumulative).
    """

    xp: ModuleType = np

    def __init__(self) -> None:
        self.stats = {"h2d_bytes": 0, "d2h_bytes": 0, "h2d_copies": 0, "d2h_copies": 0}

    def _count(self, direction: str, nbytes: int) -> None:
        self.stats[f"{direction}_bytes"] += int(nbytes)
        self.stats[f"{direction}_copies"] += 1

    def to_device(self, a: np.ndarray) -> Any:
        """A device copy of the host array ``a`` (waits for ``a``'s own download first)."""
        raise NotImplementedError

    def to_host(self, a: Any) -> np.ndarray:
        """A host copy of the device array ``a``; it may still be in flight (:meth:`done`)."""
        raise NotImplementedError

    def done(self, host: np.ndarray) -> bool:
        """Whether the download into ``host`` (from :meth:`to_host`) has completed."""
        return True

    def wait(self) -> None:
        """Complete every download in flight."""

    def free_memory(self) -> int | None:
        """Free device memory in bytes (None: unbounded, the NumPy stand-in)."""
        return None


class NumpyDevice(Device):
    """NumPy standing in for the device: copies instead of transfers (for tests on CPUs)."""

    xp = np

    def to_device(self, a: np.ndarray) -> np.ndarray:
        self._count("h2d", a.nbytes)
        return np.array(a, order="C", copy=True)

    def to_host(self, a: np.ndarray) -> np.ndarray:
        self._count("d2h", a.nbytes)
        return np.array(a, order="C", copy=True)


class CupyDevice(Device):
    """CuPy's current device: page-locked host arrays, downloads on a side stream.

    A download waits (on the GPU) for the work queued so far on the current stream, then runs
    on the side stream while the current stream goes on; the device array is kept alive until
    its copy has completed. An upload of a host array whose download is still in flight waits
    for it first.
    """

    def __init__(self) -> None:
        super().__init__()
        import cupy
        import cupyx

        self.xp = cupy
        self._pinned = cupyx.empty_pinned
        self._side = cupy.cuda.Stream(non_blocking=True)
        self._inflight: dict[int, tuple[Any, Any, np.ndarray]] = {}

    def to_device(self, a: np.ndarray) -> Any:
        entry = self._inflight.pop(id(a), None)
        if entry is not None:
            entry[0].synchronize()
        out = self.xp.empty(a.shape, dtype=a.dtype)
        if a.size:
            out.set(np.ascontiguousarray(a))
        self._count("h2d", a.nbytes)
        return out

    def to_host(self, a: Any) -> np.ndarray:
        a = self.xp.ascontiguousarray(a)
        self._count("d2h", a.nbytes)
        if a.size == 0:
            return np.empty(a.shape, dtype=a.dtype)
        host = self._pinned(a.shape, dtype=a.dtype)
        self._side.wait_event(self.xp.cuda.get_current_stream().record())
        self.xp.asnumpy(a, stream=self._side, out=host, blocking=False)
        self._inflight[id(host)] = (self._side.record(), a, host)
        self._prune()
        return host

    def _prune(self) -> None:
        for key in list(self._inflight):
            if not self._inflight[key][0].done:
                break  # the side stream completes its copies in order
            del self._inflight[key]

    def done(self, host: np.ndarray) -> bool:
        entry = self._inflight.get(id(host))
        if entry is None or entry[2] is not host:
            return True
        if entry[0].done:
            del self._inflight[id(host)]
            return True
        return False

    def wait(self) -> None:
        self._side.synchronize()
        self._inflight.clear()

    def free_memory(self) -> int:
        free = int(self.xp.cuda.runtime.memGetInfo()[0])
        return free + int(self.xp.get_default_memory_pool().free_bytes())


def device_for(storage: str, like: Any) -> Device | None:
    """The device of a matrix with ``storage`` whose data come as ``like`` (points or matrix):
    None for ``'device'``; for ``'host'``, CuPy's current device for CuPy data, else the NumPy
    stand-in."""
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {STORAGES}, got {storage!r}")
    if storage == "device":
        return None
    return NumpyDevice() if array_module(like) is np else CupyDevice()


def resolve_budget(device_memory: Any, device: Device, T: TLRMatrix, dl: bool) -> float:
    """The budget in bytes from ``device_memory`` (see the module notes); checks that one dense
    tile (two in mode DL: the diagonal tile and a panel tile) fits."""
    if device_memory is None:
        free = device.free_memory()
        budget = math.inf if free is None else DEFAULT_FRACTION * free
    elif isinstance(device_memory, bool) or not isinstance(
            device_memory, (int, float, np.integer, np.floating)):
        raise TypeError(f"device_memory must be an int (bytes) or a float (fraction of the free "
                        f"device memory), got {type(device_memory).__name__}")
    elif isinstance(device_memory, (int, np.integer)):
        if device_memory < 1:
            raise ValueError(f"device_memory must be >= 1 byte, got {device_memory}")
        budget = float(device_memory)
    else:
        if not 0 < device_memory <= 1:
            raise ValueError(f"device_memory as a float is a fraction of the free device memory, "
                             f"in (0, 1]; got {device_memory!r} (give bytes as an int)")
        free = device.free_memory()
        budget = math.inf if free is None else float(device_memory) * free
    nb = min(T.tile_size, T.n)
    need = (2 if dl else 1) * nb * nb * T.dtype.itemsize
    if need > budget:
        raise ValueError(f"device_memory={_fmt(budget)} is too small for tiles of {nb} x {nb} "
                         f"{T.dtype}: one tile column needs more than {_fmt(need)} on the device; "
                         "give more device_memory or use a smaller tile_size")
    return budget


def _fmt(nbytes: float) -> str:
    if not math.isfinite(nbytes):
        return "unbounded"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} B"


# ---------------------------------------------------------------------------- accounting
class _Ledger:
    """Bytes held on the device: reservations of the working set, cached factor tiles, and
    tiles released while their download was still in flight; never more than the budget."""

    def __init__(self, device: Device, budget: float) -> None:
        self.device, self.budget = device, budget
        self.held = 0
        self.peak = 0
        self.cache: OrderedDict[tuple[int, int], tuple[Any, Any, int]] = OrderedDict()
        self.cache_bytes = 0
        self.hits = 0
        self._pending: list[tuple[np.ndarray, int]] = []

    def pending(self) -> int:
        self._pending = [(h, b) for h, b in self._pending if not self.device.done(h)]
        return sum(b for _, b in self._pending)

    def total(self) -> int:
        return self.held + self.cache_bytes + self.pending()

    def room(self, nbytes: int, what: str, keep: frozenset = frozenset()) -> None:
        """Make room for ``nbytes`` more: complete downloads, then drop cached tiles (most
        recently used first, never those in ``keep``); ValueError if that is not enough."""
        if self.total() + nbytes <= self.budget:
            return
        self.device.wait()
        self._pending.clear()
        for key in reversed(list(self.cache)):
            if self.held + self.cache_bytes + nbytes <= self.budget:
                break
            if key not in keep:
                self._drop(key)
        if self.total() + nbytes > self.budget:
            raise ValueError(
                f"device_memory={_fmt(self.budget)} is too small: {what} needs {_fmt(nbytes)} "
                f"more while {_fmt(self.held)} are in use; give more device_memory or use a "
                "smaller tile_size")

    def reserve(self, nbytes: int, what: str, keep: frozenset = frozenset()) -> None:
        self.room(nbytes, what, keep)
        self.held += nbytes
        self.peak = max(self.peak, self.total())

    def release(self, nbytes: int, downloads: tuple[tuple[np.ndarray, int], ...] = ()) -> None:
        """Release a reservation; arrays of it still being copied to the host (``downloads``:
        host array, bytes) stay counted until their copy completes."""
        self.held -= nbytes
        self._pending.extend(downloads)

    def lookup(self, key: tuple[int, int]) -> tuple[Any, Any] | None:
        hit = self.cache.get(key)
        if hit is None:
            return None
        self.cache.move_to_end(key)
        self.hits += 1
        return hit[0], hit[1]

    def offer(self, key: tuple[int, int], u: Any, v: Any) -> None:
        """Cache a tile of the factor if it fits without dropping anything."""
        nbytes = int(u.nbytes + v.nbytes)
        if key in self.cache or not nbytes:
            return
        if self.cache_bytes + nbytes <= CACHE_SHARE * self.budget \
                and self.total() + nbytes <= self.budget:
            self.cache[key] = (u, v, nbytes)
            self.cache_bytes += nbytes
            self.peak = max(self.peak, self.total())

    def _drop(self, key: tuple[int, int]) -> None:
        self.cache_bytes -= self.cache.pop(key)[2]

    def drop_rows_above(self, k: int) -> None:
        """Drop cached tiles of rows ``< k`` (no later column reads them)."""
        for key in [key for key in self.cache if key[0] < k]:
            self._drop(key)


# ---------------------------------------------------------------------------- factorization
def _workspace(mi: int, mk: int, hint: int | None, method: str) -> tuple[int, int]:
    """Estimated elements of one tile's new factors and of its compression workspace."""
    full = min(mi, mk)
    c = min(full, 2 * (32 if hint is None else int(hint)) + _EXTRA)
    if method == "svd":
        return (mi + mk) * full, 4 * mi * mk
    # The basis Q and its sample blocks (m x c, about 3 blocks of up to c), the adjoint
    # products and right singular vectors (n x c, twice), the small SVD (c x c).
    return (mi + mk) * c, (4 * mi + 2 * mk) * c + c * c


def left_looking(T: TLRMatrix, src: TileSource | None, tol: float | None, rank: int | None,
                 norm2: float, rng: np.random.Generator, method: str, budget: float,
                 progress: bool) -> float:
    """Streamed left-looking TLR Cholesky of the host-stored ``T`` (see the module notes).

    Arguments as :func:`tricov.tlr.cholesky._left_looking`, with ``budget`` from
    :func:`resolve_budget`. Returns the final ``norm2``; records the peak and the cache hits in
    ``T._stream_report``. On any error T is marked failed.
    """
    dev = T._device
    led = _Ledger(dev, budget)
    try:
        with Progress(T.ntiles, "TLR Cholesky (left-looking, streamed)", progress) as bar:
            for k in range(T.ntiles):
                norm2 = _column(T, src, k, tol, rank, norm2, rng, method, led)
                bar.advance()
        dev.wait()
    except BaseException:
        T._state = "failed"
        dev.wait()
        raise
    finally:
        T._stream_report = {"device_memory": budget, "device_peak_bytes": led.peak,
                            "cache_hits": led.hits}
    return norm2


def _column(T: TLRMatrix, src: TileSource | None, k: int, tol: float | None, rank: int | None,
            norm2: float, rng: np.random.Generator, method: str, led: _Ledger) -> float:
    """Tile column ``k``: diagonal update and factor, then the tiles below, chunk by chunk."""
    dev, xp = led.device, led.device.xp
    nt, off, isz = T.ntiles, T.offsets, T.dtype.itemsize
    mk = int(off[k + 1] - off[k])
    led.drop_rows_above(k)
    # Row k of the factor: the diagonal update needs U_kj, V_kj; W = [U_kj] and V_kj stay.
    used = [j for j in range(k) if T._U[k][j].shape[1]]
    hits = {j: led.lookup((k, j)) for j in used}
    keep = frozenset((k, j) for j in used if hits[j] is not None)
    miss = sum(int(T._U[k][j].nbytes + T._V[k][j].nbytes) for j in used if hits[j] is None)
    dbytes = mk * mk * isz
    led.reserve(dbytes + miss, f"the diagonal tile and row {k}", keep)
    d = dev.to_device(T._diag[k])
    row = [hits[j] or (dev.to_device(T._U[k][j]), dev.to_device(T._V[k][j])) for j in used]
    width = sum(int(u.shape[1]) for u, _ in row)
    wbytes = mk * width * isz
    W = None
    if used:
        led.reserve(2 * wbytes, f"the diagonal update of tile {k}")
        roots = [_root(u, v) for u, v in row]
        X = xp.ascontiguousarray(xp.concatenate(roots, axis=1))
        del roots
        dense.syrk(X, d, alpha=-1.0, beta=1.0)
        del X
        W = xp.concatenate([u for u, _ in row], axis=1)  # reuses the room of the roots
        led.release(wbytes)
    _factor_diag(T, k, d)
    host_d = dev.to_host(d)
    T._diag[k] = host_d
    row_v = [v for _, v in row]
    del row
    try:
        if k < nt - 1:
            cols = width + (mk if src is not None else 0)
            hints = (rank_hints(T, k) if src is not None
                     else [T._U[i][k].shape[1] for i in range(k + 1, nt)])
            for i0, i1 in panel_chunks(off, k, max(cols, 1), hints):
                hint = chunk_hint(hints, k, i0, i1)
                for a, b, est in _fit(T, src, k, i0, i1, used, width, hint, method, led):
                    norm2 = _chunk(T, src, k, a, b, d, W, row_v, used, tol, rank, norm2, rng,
                                   method, hint, est, led)
    finally:
        # The diagonal tile may still be on its way to the host; the rest of row k is freed.
        led.release(dbytes + miss + (wbytes if used else 0), ((host_d, dbytes),))
    return norm2


def _root(u: Any, v: Any) -> Any:
    """``U`` times a root of ``V^H V`` (see :func:`tricov.tlr.cholesky._gram_root`)."""
    xp = array_module(u)
    w, p = xp.linalg.eigh(herm(v) @ v)
    return u @ (p * xp.sqrt(xp.maximum(w, 0)).astype(p.dtype))


def _row_bytes(T: TLRMatrix, i: int, used: list[int]) -> int:
    return sum(int(T._U[i][j].nbytes + T._V[i][j].nbytes) for j in used)


def _fit(T: TLRMatrix, src: TileSource | None, k: int, i0: int, i1: int, used: list[int],
         width: int, hint: int | None, method: str, led: _Ledger) -> list[tuple[int, int, int]]:
    """Split the chunk ``[i0, i1)`` into pieces ``(a, b, bytes)`` whose working set (the
    ``X_i`` blocks, the base tiles, the new factors and the workspace: ``bytes``), plus the
    largest row of factors uploaded for one ``X_i``, fit in what the budget leaves beside
    row ``k``."""
    off, isz = T.offsets, T.dtype.itemsize
    mk = int(off[k + 1] - off[k])
    avail = led.budget - led.held
    pieces: list[tuple[int, int, int]] = []
    a, est, trans = i0, 0, 0
    for i in range(i0, i1):
        mi = int(off[i + 1] - off[i])
        base = (2 * mi * mk if src is not None
                else (mi + mk) * int(T._U[i][k].shape[1]))  # DL: the panel, the kernel's temps
        nf, ws = _workspace(mi, mk, hint, method)
        e, t = isz * (mi * width + base + nf + ws), _row_bytes(T, i, used)
        if i > a and est + e + max(trans, t) > avail:
            pieces.append((a, i, est))
            a, est, trans = i, 0, 0
        if e + t > avail:
            raise ValueError(
                f"device_memory={_fmt(led.budget)} is too small: tile ({i}, {k}) needs about "
                f"{_fmt(e + t)} on the device beside the {_fmt(led.held)} of tile column {k}'s "
                "diagonal tile and row; give more device_memory or use a smaller tile_size")
        est, trans = est + e, max(trans, t)
    pieces.append((a, i1, est))
    return pieces


def _schur_block(T: TLRMatrix, i: int, used: list[int], row_v: list[Any], width: int,
                 led: _Ledger) -> Any:
    """``X_i = [U_ij (V_ij^H V_kj)]_j`` on the device (the tiles of row ``i``: cached, or
    uploaded for this product and offered to the cache)."""
    dev, xp = led.device, led.device.xp
    mi = int(T.offsets[i + 1] - T.offsets[i])
    x = xp.zeros((mi, width), dtype=T.dtype)
    hits = {j: led.lookup((i, j)) for j in used}
    keep = frozenset((i, j) for j in used if hits[j] is not None)
    miss = sum(int(T._U[i][j].nbytes + T._V[i][j].nbytes) for j in used
               if hits[j] is None and T._U[i][j].shape[1])
    led.reserve(miss, f"the factors of tile row {i}", keep)
    uploaded = []
    col = 0
    for j, vk in zip(used, row_v, strict=True):
        r = int(vk.shape[1])
        if T._U[i][j].shape[1]:
            f = hits[j]
            if f is None:
                f = (dev.to_device(T._U[i][j]), dev.to_device(T._V[i][j]))
                uploaded.append(((i, j), f))
            x[:, col:col + r] = f[0] @ (herm(f[1]) @ vk)
        col += r
    led.release(miss)
    for key, (u, v) in uploaded:
        led.offer(key, u, v)
    return x


def _chunk(T: TLRMatrix, src: TileSource | None, k: int, a: int, b: int, d: Any, W: Any,
           row_v: list[Any], used: list[int], tol: float | None, rank: int | None, norm2: float,
           rng: np.random.Generator, method: str, hint: int | None, est: int,
           led: _Ledger) -> float:
    """Tiles ``a <= i < b`` of column ``k``: Schur tiles compressed, solved with ``L_kk``,
    copied to the host."""
    dev, xp = led.device, led.device.xp
    off = T.offsets
    mi, mk = int(off[a + 1] - off[a]), int(off[k + 1] - off[k])
    led.reserve(est, f"tiles {a}..{b - 1} of column {k}")
    if src is not None:
        panel = src.panel(k, a, b)
        norm2 += 2.0 * fro2(panel, None)
        base: Any = DenseStack(panel.reshape(b - a, mi, mk))
        del panel
    else:
        base = _LowRankStack([(dev.to_device(T._U[i][k]), dev.to_device(T._V[i][k]))
                              for i in range(a, b)], (mi, mk), T.dtype, xp)
    op = base
    if W is not None:
        op = _Schur(base, [_schur_block(T, i, used, row_v, width=int(W.shape[1]), led=led)
                           for i in range(a, b)], W)
    atol = tile_atol(tol, norm2, T.ntiles)
    factors = compress_op(op, None if atol is None else np.full(b - a, atol), rank, method, rng,
                          hint)
    del op, base
    actual = sum(int(u.nbytes + v.nbytes) for u, v in factors)
    led.release(est)
    led.reserve(actual, f"the new tiles {a}..{b - 1} of column {k}")
    factors = _solve_v(d, factors, led)
    downloads = []
    for t, (u, v) in enumerate(factors):
        hu, hv = dev.to_host(u), dev.to_host(v)
        T._U[a + t][k], T._V[a + t][k] = hu, hv
        downloads += [(hu, int(u.nbytes)), (hv, int(v.nbytes))]
    led.release(actual, tuple(downloads))
    for t, (u, v) in enumerate(factors):
        led.offer((a + t, k), u, v)
    return norm2


def _solve_v(d: Any, factors: list[tuple[Any, Any]], led: _Ledger) -> list[tuple[Any, Any]]:
    """``V_ik <- L_kk^-1 V_ik`` for the tiles of a chunk, concatenated (as
    :func:`tricov.tlr.cholesky._trsm_column`)."""
    xp = led.device.xp
    out = list(factors)
    idx = [t for t, (_, v) in enumerate(factors) if v.shape[1]]
    start = 0
    while start < len(idx):
        stop, width = start, 0
        while stop < len(idx) and (stop == start or width + factors[idx[stop]][1].shape[1]
                                   <= _TRSM_COLUMNS):
            width += int(factors[idx[stop]][1].shape[1])
            stop += 1
        nbytes = int(d.shape[0]) * width * d.dtype.itemsize
        led.reserve(nbytes, "the triangular solve of a column")
        block = xp.concatenate([factors[t][1] for t in idx[start:stop]], axis=1)
        dense.trsm(d, block)
        col = 0
        for t in idx[start:stop]:
            r = int(factors[t][1].shape[1])
            out[t] = (factors[t][0], xp.ascontiguousarray(block[:, col:col + r]))
            col += r
        del block
        led.release(nbytes)
        start = stop
    return out
