"""Page faults: what a jitted CPU step pays for every large buffer it allocates.

XLA:CPU allocates a jitted function's temporary buffers with ``malloc`` on every call.
glibc serves blocks above its mmap threshold (dynamic, at most 32 MiB by default) with fresh
``mmap`` pages and returns them on ``free``, so the next call faults every page in again
(and the kernel zeroes it). This script times the forward scan of the gated
AntisymmetricRNN step storing 1, 2 or 3 stacked ``(T, B, n)`` outputs -- the same
arithmetic, only the residual memory differs -- and reports ms and minor page faults per
call. Run it under different allocator settings to see the effect, e.g.::

    python benchmarks/page_faults.py
    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 python benchmarks/page_faults.py
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_interleaved  # noqa: E402  (benchmarks/timing.py)


def gated_forward(n: int, steps: int, batch: int, outputs: int):
  """``(fn, state)``: a jitted forward scan of ``h + 0.1 sigmoid(a + u_z) tanh(a + u_h)``,
  ``a = h K``, stacking ``h`` and (``outputs`` > 1) ``tanh``, (> 2) ``sigmoid`` per step."""
  k = jax.random.normal(jax.random.key(0), (n, n)) / n ** 0.5
  u_h = jax.random.normal(jax.random.key(1), (steps, batch, n))
  u_z = 0.5 * u_h
  h0 = jnp.zeros((batch, n))

  @jax.jit
  def fn(kernel):
    def body(h, xs):
      a = h @ kernel
      t = jnp.tanh(a + xs[0])
      s = jax.nn.sigmoid(a + xs[1])
      h_new = h + 0.1 * s * t
      return h_new, (h_new, t, s)[:outputs]

    ys = jax.lax.scan(body, h0, (u_h, u_z))[1]
    return kernel + 1e-6 * sum(jnp.mean(y) for y in ys)

  return fn, k


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--n", type=int, default=128)
  parser.add_argument("--T", type=int, default=200)
  parser.add_argument("--batch", type=int, default=128)
  parser.add_argument("--repeats", type=int, default=20)
  args = parser.parse_args(argv)
  entries = {k: gated_forward(args.n, args.T, args.batch, k) for k in (1, 2, 3)}
  res = time_interleaved(entries, args.repeats, 2)
  mib = args.n * args.T * args.batch * 4 / 2 ** 20
  env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                 if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES") or "default"
  print(f"n={args.n} T={args.T} batch={args.batch}: one (T, B, n) array = {mib:.1f} MiB; "
        f"allocator settings: {env}")
  print("| stacked outputs | median ms | min ms | minor page faults / call |")
  print("|---:|---:|---:|---:|")
  for k, t in res.items():
    print(f"| {k} | {t.median_ms:.2f} | {t.min_ms:.2f} | {t.faults_per_call:.0f} |")
  return 0


if __name__ == "__main__":
  sys.exit(main())
