"""Numba kernels of the batched CPU operations.

* :mod:`.simd`: lane vectors (one SIMD register of ``W`` batch members) and register
  transposes between member memory and scratch.
* :mod:`.lanes`: element arithmetic on lane vectors, one source for real and complex data.
* :mod:`.small`: the lane kernels of every operation, fused chains, and their driver.
* :mod:`.calls`: parallel loops that call BLAS/LAPACK (or a compiled worker) by address.
* :mod:`.members`: element-wise helpers over the members of a batch.

Importing this package first drops Numba's on-disk caches of tricov where they may be stale
(:func:`drop_stale_caches`); every module of tricov with cached compiled functions imports it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: The package whose caches are kept, and the name of the file (in its ``__pycache__``) that
#: holds the fingerprint of the Numba sources its caches were compiled from.
ROOT = Path(__file__).resolve().parents[2]
STAMP = "tricov-numba.stamp"


def drop_stale_caches(root: Path = ROOT) -> bool:
    """Delete the Numba caches (``__pycache__/*.nbi``, ``*.nbc``) under the package ``root``
    when any of its Numba sources changed since they were written; return whether it did.

    Numba checks a cached function against its own source file only, not the modules whose
    functions it inlines (:mod:`.simd` and :mod:`.lanes` into :mod:`.small`, the Bessel
    functions into the covariance tiles): after an edit or an upgrade that changed only those,
    it would run stale machine code. So all of them are kept under one fingerprint, the
    contents of every module of the package that mentions Numba, in ``root/__pycache__/STAMP``.
    Best effort: a read-only installation is left as it is (Numba then
    writes its caches elsewhere, per user).
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if b"numba" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text)
    stamp = root / "__pycache__" / STAMP
    try:
        if stamp.read_text() == digest.hexdigest():
            return False
    except OSError:
        pass
    try:
        for cache in root.rglob("__pycache__/*.nb[ic]"):
            cache.unlink(missing_ok=True)
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        return False
    return True


drop_stale_caches()
