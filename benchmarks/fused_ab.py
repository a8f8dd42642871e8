"""Benchmark: the fused scans of the working tree against those of a git revision, interleaved.

A change to :mod:`lvf_jax.layers.fused` moves the tanh floor of ``benchmarks/cells.py``
as much as the cells, so its ratios cannot show it. This script loads
``lvf_jax/layers/fused.py`` as it is at ``--base`` (``git show``) next to the working
tree's, builds the same training iteration as ``cells.py`` (forward + backward + SGD of
:class:`lvf_jax.layers.Recurrent` with ``fused=True``; compilation excluded) once with each
(the layer is traced while ``lvf_jax.layers.recurrent`` points at that version of the
module) and times the two in one interleaved loop (``benchmarks/timing.py``), so both see
the same machine load. Only ``fused.py`` is swapped: the gated scans of ``fused_gated.py``
(LSTM, GRU, GORU, NC-GRU) and everything else come from the working tree. Table: median
(and min) ms of both versions, their ratio and their minor page faults per iteration.
Example::

    python benchmarks/fused_ab.py --base HEAD --cells rnn exprnn --n 128 --T 200 --batch 10 128
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import jax

from lvf_jax import layers
from lvf_jax.layers import recurrent

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cells import build, runs_at, training_step  # noqa: E402  (benchmarks/cells.py)
from timing import measured_on, time_interleaved  # noqa: E402  (benchmarks/timing.py)

MODULE = "lvf_jax/layers/fused.py"


def load_base(rev: str):
  """``lvf_jax.layers.fused`` as it is at git revision ``rev``, as a separate module."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  try:
    source = subprocess.run(["git", "show", f"{rev}:{MODULE}"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
  except subprocess.CalledProcessError as e:
    raise SystemExit(f"fused_ab: cannot read {MODULE} at --base {rev!r}: {e.stderr.strip()}")
  path = os.path.join(tempfile.mkdtemp(prefix="fused_ab_"), "fused_base.py")
  with open(path, "w") as f:
    f.write(source)
  spec = importlib.util.spec_from_file_location("lvf_jax_fused_base", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def compiled_step(module, x, fused_module):
  """``(fn, state)`` of ``training_step``, traced and compiled with ``fused_module``."""
  working = recurrent.fused_lib
  recurrent.fused_lib = fused_module
  try:
    fn, state = training_step(module, x)
    state = jax.block_until_ready(fn(state))  # traces (and compiles) here
  finally:
    recurrent.fused_lib = working
  return fn, state


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--base", default="HEAD", help="git revision to compare against")
  parser.add_argument("--cells", nargs="+", default=["rnn", "exprnn", "antisymmetric"])
  parser.add_argument("--n", nargs="+", type=int, default=[128, 256])
  parser.add_argument("--T", nargs="+", type=int, default=[200])
  parser.add_argument("--batch", nargs="+", type=int, default=[10, 128])
  parser.add_argument("--input-size", type=int, default=16)
  parser.add_argument("--input-projection", default="auto",
                      choices=["auto", "hoisted", "in_loop"])
  parser.add_argument("--repeats", type=int, default=10)
  parser.add_argument("--warmup", type=int, default=1)
  parser.add_argument("--out", default=None, help="also write the table to this file")
  args = parser.parse_args(argv)
  for name, values in (("--n", args.n), ("--T", args.T), ("--batch", args.batch)):
    if any(v <= 0 for v in values):
      parser.error(f"argument {name}: values must be > 0; got {values}")
  if args.repeats <= 0 or args.warmup < 0 or args.input_size <= 0:
    parser.error("--repeats and --input-size must be > 0 and --warmup >= 0; got "
                 f"{args.repeats}, {args.input_size}, {args.warmup}")
  base = load_base(args.base)
  working = recurrent.fused_lib
  lines = [
      f"{measured_on()}; median (and min) of {args.repeats} interleaved training "
      f"iterations, fused.py at --base {args.base} against the working tree, input size "
      f"{args.input_size}, input_projection={args.input_projection}.",
      "Command: python benchmarks/fused_ab.py " + " ".join(argv or sys.argv[1:]), "",
      "| cell | n | T | batch | base ms (min) | working ms (min) | working / base "
      "| faults / iter, base / working |",
      "|---|---:|---:|---:|---:|---:|---:|---:|"]
  for n in args.n:
    for steps in args.T:
      for batch in args.batch:
        x = jax.random.normal(jax.random.key(2), (batch, steps, args.input_size))
        entries = {}
        for name in args.cells:
          if not runs_at(name, n):
            continue
          module = layers.Recurrent(build(name, n), fused=True,
                                    input_projection=args.input_projection)
          entries[(name, "base")] = compiled_step(module, x, base)
          entries[(name, "working")] = compiled_step(module, x, working)
        res = time_interleaved(entries, args.repeats, args.warmup)
        first = len(lines)
        for name in args.cells:
          if (name, "base") not in res:
            continue
          b, w = res[(name, "base")], res[(name, "working")]
          lines.append(
              f"| {name} | {n} | {steps} | {batch} | {b.median_ms:.2f} ({b.min_ms:.2f}) | "
              f"{w.median_ms:.2f} ({w.min_ms:.2f}) | {w.median_ms / b.median_ms:.2f} | "
              f"{b.faults_per_call:.0f} / {w.faults_per_call:.0f} |")
        print("\n".join(lines[first:]), flush=True)
        if args.out:
          with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
  print("\n".join(lines))
  return 0


if __name__ == "__main__":
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
  sys.exit(main())
