"""Compile every CUDA kernel template for sm_90 without a GPU, so a broken kernel cannot land
(for sm_90a where ``nvrtc.ARCH`` names a source).

Uses nvcc when the machine has it (CI does); the instantiations are those the executors ask
for at run time (see ``tricov.kernels.instantiations``).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tricov.kernels import definitions, instantiations, nvrtc

NVCC = shutil.which("nvcc")
UNITS = [(src.name, ctype) for src in nvrtc.sources()
         for ctype in sorted(set(instantiations(src.name)) | set(definitions(src.name)))]


def _target(source: str) -> list[str]:
    """nvcc's target options: sm_90, or the source's own architecture alone (``-arch=sm_90a``
    would add generic compute_90 code, which cannot hold sm_90a's instructions)."""
    arch = nvrtc.ARCH.get(source)
    if arch is None:
        return ["-arch=sm_90"]
    return ["-gencode", f"arch=compute_{arch[3:]},code={arch}"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("source,ctype", UNITS)
def test_compiles_for_sm90(source, ctype, tmp_path):
    unit = tmp_path / "unit.cu"
    lines = [f'#include "{nvrtc.SOURCE_DIR / source}"']
    lines += [f"template {decl};" for decl in instantiations(source).get(ctype, [])]
    lines += definitions(source).get(ctype, [])
    unit.write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        [NVCC, *_target(source), "-std=c++17", "-c", str(unit), "-o", str(tmp_path / "unit.o"),
         f"-I{nvrtc.SOURCE_DIR}", "-Xptxas", "-warn-spills"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "spill" not in result.stderr, result.stderr[-4000:]


def test_cond_split_slices_fit_the_block():
    """tri_cond and its slices: every slice of a leaf's rows is a whole number of groups of 8
    rows and divides the block's threads (a row per THREADS split / order threads)."""
    from tricov.kernels import THREADS, cond_split

    for order in (256, 512, 1024, 2048):
        rows = order // cond_split(order)
        assert rows * cond_split(order) == order
        assert THREADS % rows == 0 and rows % 8 == 0, order


def test_large_batch_lanes_from_their_threshold():
    """The register kernels' lanes for large batches take over at their fewest members and not
    before, and the CI compile check builds every kernel they name."""
    from tricov.kernels import (
        BATCHED_LANES,
        BATCHED_LANES_LARGE,
        batched_lanes,
        batched_small,
        definitions,
    )

    chars = {"f": "float", "d": "double"}
    built = definitions("batched_small.cu")
    for (ch, order, op), (fewest, lanes) in BATCHED_LANES_LARGE.items():
        small = BATCHED_LANES.get((ch, order, op), order)
        assert lanes != small, (ch, order, op)
        assert batched_lanes(ch, order, op) == batched_lanes(ch, order, op, fewest - 1) == small
        assert batched_lanes(ch, order, op, fewest) == lanes
        assert batched_small(chars[ch], order, lanes, op)[1] in built[chars[ch]]


def test_wide_tiles_pad_no_further():
    """Tiles of 128 (float64 TRMM on the tensor cores) only where they pad an output of at least
    128 x 128 no further than tiles of 64; never without ``wide``."""
    from tricov.kernels import tile_order

    def padded(x, t):
        return -(-x // t) * t

    for rows in range(1, 400, 7):
        for cols in (1, 32, 100, 128, 130, 192, 200, 256, 300):
            assert tile_order(rows, cols, False) == (32 if rows <= 32 else 64)
            order = tile_order(rows, cols, True)
            if order == 128:
                assert min(rows, cols) >= 128
                assert padded(rows, 128) == padded(rows, 64)
                assert padded(cols, 128) == padded(cols, 64)
            else:
                assert order == (32 if rows <= 32 else 64)
    assert tile_order(256, 256, True) == tile_order(200, 200, True) == 128


def test_launch_parameters_pack_into_their_slots():
    """nvrtc.launch's reused host buffer: each parameter lands in its 16-byte slot, and the
    driver's array holds the slots' addresses (refilled in place, call after call)."""
    import ctypes
    import struct

    codes = "qiDQdf"
    layout, host, slots, array = nvrtc._parameters(codes)
    assert slots == ctypes.addressof(array)
    assert [a - ctypes.addressof(host) for a in array] == [16 * i for i in range(len(codes))]
    for scale in (1, -3):
        values = (5 * scale, 7 * scale, 1.5 * scale, -2.5 * scale, 123456789, 3.25 * scale,
                  0.5 * scale)
        layout.pack_into(host, 0, *values)
        got = [struct.unpack_from("<q", host, 0)[0], struct.unpack_from("<i", host, 16)[0],
               *struct.unpack_from("<2d", host, 32), struct.unpack_from("<Q", host, 48)[0],
               struct.unpack_from("<d", host, 64)[0], struct.unpack_from("<f", host, 80)[0]]
        assert got == list(values)
    assert nvrtc._parameters(codes)[1] is host  # one buffer per thread and layout


def test_address_offsets_count_complex_values_twice():
    """The replay of batched calls redirects an info address by its offset in the packed
    parameters: a complex parameter is given as two values but takes one slot."""
    from tricov.kernels.nvrtc import address_offsets, parameter_buffer

    codes, args = "qDQiQ", (7, 1.0, -2.0, 0xABC0, 3, 0xABC0)
    offsets = address_offsets(codes, args, 0xABC0)
    layout, host, _, _ = parameter_buffer(codes)
    layout.pack_into(host, 0, *args)
    assert offsets == (32, 64)
    for at in offsets:
        assert int.from_bytes(host.raw[at:at + 8], "little") == 0xABC0
    assert address_offsets(codes, args, 0xDEF0) == ()


def test_fused_tf32_tilings():
    """The fused split-TF32 kernel's tilings: the widest block that divides the columns, its
    shared memory within a multiprocessor's, and the depth cut into parts (each of 8 slabs or
    more) only while the blocks do not yet fill the multiprocessors."""
    from tricov.kernels import TF32_NARROW, tf32_narrow_smem, tf32_narrow_tiling

    sms, smem = 132, 233472  # an H100
    for bn, stages in TF32_NARROW.items():
        assert tf32_narrow_smem(bn, stages) + 1024 <= smem
    for m in (4, 1000, 2048, 2052, 4096, 8192, 30000):
        for n in (64, 128, 192, 256, 512):
            for k in (32, 2048, 2080, 8192):
                bn, stages, splits = tf32_narrow_tiling(m, n, k, sms, smem)
                assert n % bn == 0 and (bn == 256 or n % (2 * bn)), (n, bn)
                assert stages == TF32_NARROW[bn]
                per_sm = smem // (tf32_narrow_smem(bn, stages) + 1024)
                blocks = (n // bn) * -(-m // 64)
                assert splits == 1 or (splits * blocks <= sms * per_sm and 8 * splits <= k // 32)
    assert tf32_narrow_tiling(8192, 256, 8192, sms, smem) == (256, 3, 1)
    assert tf32_narrow_tiling(4096, 256, 4096, sms, smem) == (256, 3, 2)
    assert tf32_narrow_tiling(2048, 64, 2048, sms, smem) == (64, 4, 8)
