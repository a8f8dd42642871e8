"""Benchmark: hoisted vs in-loop input projection, ms per training iteration.

:class:`lvf_jax.layers.Recurrent` with ``fused=True`` either projects the whole input
sequence before the loop (``input_projection='hoisted'``: one ``(T B, d) x (d, n)``
product, a ``(T, B, n)`` array written and read back by the loop) or forms ``x_t W`` inside
the loop (``'in_loop'``: one ``(B, d) x (d, n)`` product per step; the weight gradient is
still one large product after the backward loop). This script times both on a grid of
input widths ``d`` and prints the ratio in-loop / hoisted per setting, the figure that
sets ``Recurrent``'s ``'auto'`` rule (``IN_LOOP_RATIO``).

Same iteration and interleaved timing as ``benchmarks/cells.py`` (forward + backward + SGD,
jitted, warm-up excluded, every repetition times each variant once). Example::

    python benchmarks/input_projection.py --cells rnn exprnn --n 128 256 --d 1 16 64 \\
        --T 200 --batch 10 128
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

from lvf_jax import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cells import build, training_step  # noqa: E402  (benchmarks/cells.py)
from timing import command_line, measured_on, time_interleaved  # noqa: E402  (benchmarks/timing.py)

MODES = ("hoisted", "in_loop")


def variants(cell: str, n: int, d: int, steps: int, batch: int) -> dict:
  """``{mode: (fn, state)}``: one jitted training iteration of ``Recurrent(cell, fused=True,
  input_projection=mode)`` on a random ``(batch, steps, d)`` input, for each mode."""
  x = jax.random.normal(jax.random.key(2), (batch, steps, d))
  return {mode: training_step(layers.Recurrent(build(cell, n), fused=True,
                                               input_projection=mode), x)
          for mode in MODES}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cells", nargs="+", default=["rnn", "exprnn"])
  parser.add_argument("--n", nargs="+", type=int, default=[128, 256, 512])
  parser.add_argument("--d", nargs="+", type=int, default=[1, 16, 32, 64, 128])
  parser.add_argument("--T", nargs="+", type=int, default=[200])
  parser.add_argument("--batch", nargs="+", type=int, default=[10, 128])
  parser.add_argument("--repeats", type=int, default=7)
  parser.add_argument("--warmup", type=int, default=1)
  parser.add_argument("--out", default=None, help="write the markdown table to this file")
  args = parser.parse_args(argv)

  header = ("| cell | n | d | T | batch | hoisted ms | in loop ms | in loop / hoisted | "
            "hoisted faults / iter | in loop faults / iter |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
  rows = []
  print(header, flush=True)
  for cell in args.cells:
    for n in args.n:
      for d in args.d:
        for steps in args.T:
          for batch in args.batch:
            res = time_interleaved(variants(cell, n, d, steps, batch), args.repeats,
                                   args.warmup + 1)
            h, i = res["hoisted"], res["in_loop"]
            row = (f"| {cell} | {n} | {d} | {steps} | {batch} | {h.median_ms:.2f} | "
                   f"{i.median_ms:.2f} | {i.median_ms / h.median_ms:.2f} | "
                   f"{h.faults_per_call:.0f} | {i.faults_per_call:.0f} |")
            rows.append(row)
            print(row, flush=True)
            if args.out:  # after every setting: a crash loses at most that setting
              _write(args.out, argv, args, header, rows)
  return 0


def _write(path, argv, args, header, rows):
  meta = (f"{measured_on()}; median of {args.repeats} "
          f"interleaved jitted training iterations (forward + backward + SGD) of "
          f"Recurrent(fused=True).\n"
          f"Command: {command_line('benchmarks/input_projection.py', argv)}\n\n")
  with open(path, "w") as f:
    f.write(meta + header + "\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/cells.py
  sys.exit(main())
