"""Benchmark: median milliseconds per training iteration of every cell.

One iteration = forward + backward + an SGD update of all parameters on a random batch
(``jax.jit``-compiled; compilation and ``--warmup`` iterations excluded). Each cell is timed

* in :class:`lvf_jax.layers.Recurrent` (``prepare`` once per sequence, hoisted input
  projection, ``jax.lax.scan`` of the pure step) -- column ``layer``;
* inside :class:`flax.linen.RNN` (the cell's ``__call__`` per step, i.e. the recurrent
  matrix recomputed every step) -- column ``nn.RNN``;

next to the floor: a plain tanh RNN (:class:`lvf_jax.cells.TanhRNNCell`) in the same layer.
The table reports the median and the minimum over ``--repeats`` iterations (on a shared,
oversubscribed CPU the median of cells using LU solves / ``expm`` jumps by multiples of the
scheduler quantum; the minimum is the more stable figure there).

Default grid: hidden ``n`` in {128, 256, 512}, ``T`` in {200, 1000}, batch in {10, 128}
(slow on a CPU: restrict it with the flags). Example::

    python benchmarks/cells.py --n 64 --T 50 --batch 10 --repeats 5 --out bench.md
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import cells as cells_lib
from lvf_jax import layers

FLOOR = "rnn"


def build(name: str, n: int):
  kw = {"lvf": dict(integrator="midpoint", tau=1.0)}.get(name, {})
  return cells_lib.make_cell(name, n, **kw)


def time_training_step(module, x, repeats: int, warmup: int,
                       lr: float = 1e-3) -> tuple[float, float]:
  """(median, min) ms of a jitted forward + backward + SGD step of ``module`` on ``x``."""
  params = jax.jit(module.init)(jax.random.key(0), x)["params"]
  target = jax.random.normal(jax.random.key(1), x.shape[:-1] + (1,), x.dtype)

  def loss_fn(p):
    y = module.apply({"params": p}, x)
    return jnp.mean((jnp.mean(y, axis=-1, keepdims=True) - target) ** 2)

  @jax.jit
  def train_step(p):
    loss, g = jax.value_and_grad(loss_fn)(p)
    return jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g), loss

  params, loss = train_step(params)  # compile
  jax.block_until_ready((params, loss))
  for _ in range(warmup):
    params, loss = train_step(params)
  jax.block_until_ready((params, loss))
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    params, loss = train_step(params)
    jax.block_until_ready((params, loss))
    times.append((time.perf_counter() - t0) * 1e3)
  return statistics.median(times), min(times)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cells", nargs="+", default=sorted(cells_lib.CELLS),
                      choices=sorted(cells_lib.CELLS))
  parser.add_argument("--n", nargs="+", type=int, default=[128, 256, 512])
  parser.add_argument("--T", nargs="+", type=int, default=[200, 1000])
  parser.add_argument("--batch", nargs="+", type=int, default=[10, 128])
  parser.add_argument("--input-size", type=int, default=16)
  parser.add_argument("--repeats", type=int, default=10)
  parser.add_argument("--warmup", type=int, default=2)
  parser.add_argument("--paths", nargs="+", default=["layer", "nn.RNN"],
                      choices=["layer", "nn.RNN"],
                      help="nn.RNN recomputes the matrix every step: slow for large n, T")
  parser.add_argument("--out", default=None, help="write the markdown table to this file")
  args = parser.parse_args(argv)

  header = ("| cell | n | T | batch | layer ms | nn.RNN ms | layer / floor | nn.RNN / layer |"
            " layer min ms | nn.RNN min ms |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
  rows = []
  print(header, flush=True)
  for n in args.n:
    for steps in args.T:
      for batch in args.batch:
        x = jax.random.normal(jax.random.key(2), (batch, steps, args.input_size))
        floor = None
        names = [FLOOR] + [c for c in args.cells if c != FLOOR]
        for name in names:
          if name == "nnrnn" and n % 2:
            continue
          res = {}
          if "layer" in args.paths or name == FLOOR:
            res["layer"] = time_training_step(layers.Recurrent(build(name, n)), x,
                                              args.repeats, args.warmup)
          if "nn.RNN" in args.paths:
            res["nn.RNN"] = time_training_step(nn.RNN(build(name, n)), x,
                                               args.repeats, args.warmup)
          if name == FLOOR:
            floor = res["layer"][0]
            if name not in args.cells:
              continue
          fmt = lambda v: "-" if v is None else f"{v:.2f}"
          lay, lay_min = res.get("layer", (None, None))
          rnn, rnn_min = res.get("nn.RNN", (None, None))
          ratio_floor = None if lay is None else lay / floor
          ratio_rnn = None if (lay is None or rnn is None) else rnn / lay
          label = f"{name} (floor)" if name == FLOOR else name
          row = (f"| {label} | {n} | {steps} | {batch} | {fmt(lay)} | {fmt(rnn)} | "
                 f"{fmt(ratio_floor)} | {fmt(ratio_rnn)} | {fmt(lay_min)} | {fmt(rnn_min)} |")
          rows.append(row)
          print(row, flush=True)

  if args.out:
    dev = jax.devices()[0]
    meta = (f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
            f"{dev.platform} ({dev.device_kind}; {platform.processor() or platform.machine()}), "
            f"jax {jax.__version__}; median (and min) of {args.repeats} jitted training "
            f"iterations (forward + backward + SGD), input size {args.input_size}; ratios use "
            f"medians.\n"
            f"Command: python benchmarks/cells.py {' '.join(argv if argv is not None else sys.argv[1:])}\n\n")
    with open(args.out, "w") as f:
      f.write(meta + header + "\n" + "\n".join(rows) + "\n")
  return 0


if __name__ == "__main__":
  sys.exit(main())
