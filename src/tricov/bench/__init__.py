"""Benchmark harness of tricov: cases, devices, timing, reports and tuning.

* :mod:`.cases`: what each benchmarked operation needs (shapes, flops, inputs, the tricov call);
  register new ones with :func:`.cases.register`.
* :mod:`.devices`: where it runs (memory, timing, native and GEMM peers); CPU only for now.
* :mod:`.runner`: the measurement loop (restored inputs, interleaved repeats, medians).
* :mod:`.report`: Rich tables, CSV, plots. :mod:`.machine`: what it ran on.
* :mod:`.tune`: leaf-size tuning. :mod:`.commands`, :mod:`.demo`: the ``tricov`` subcommands.

Import the submodules directly; this package imports nothing, to keep the command line fast.
"""
