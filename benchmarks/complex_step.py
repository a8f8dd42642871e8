"""Benchmark: where a complex-state cell's training iteration spends its time beyond the floor.

The unitary cells (uRNN, EURNN, full-capacity uRNN) carry ``[Re h | Im h]`` (``2n``
entries) and are held to the tanh floor at that state width (``benchmarks/cells.py``). At
batch 10 they read above the bound that their ``prepare`` alone explains. This script
splits the difference, timing interleaved training iterations (forward + backward + SGD,
as ``cells.py``) of

* ``cell``: the cell in ``Recurrent(fused=True)`` (``prepare`` builds the unitary matrix
  from its factors every iteration);
* ``fixed kernel, complex modReLU``: the same fused scan (``rnn_scan(...,
  activation='modrelu_split')``, same input projection form) with the ``2n x 2n`` kernel
  a plain trained parameter -- the cell without its ``prepare``;
* ``fixed kernel, tanh``: that scan with ``tanh`` instead of the complex modReLU;
* ``floor``: ``Recurrent(TanhRNNCell(2n), fused=True)``;

and ``prepare`` alone (forward + backward, as ``cells.py``'s ``prepare ms``). So
``cell - fixed modReLU`` is what ``prepare`` costs inside the iteration and ``fixed
modReLU - fixed tanh`` what the complex modReLU costs per sequence. Example::

    python benchmarks/complex_step.py --cells urnn eurnn --n 128 256 --T 200 --batch 10
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import layers
from lvf_jax.layers import fused

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cells import FLOOR, PREPARE_INNER, build, prepare_step, training_step  # noqa: E402
from timing import time_interleaved  # noqa: E402  (benchmarks/timing.py)


class FixedKernelScan(nn.Module):
  """``rnn_scan`` over batch-major inputs with a plain ``(width, width)`` kernel parameter,
  the input projection inside the loop or hoisted as ``Recurrent``'s ``'auto'`` would."""

  width: int
  activation: str

  @nn.compact
  def __call__(self, x):
    d = x.shape[-1]
    kernel = self.param("kernel", nn.initializers.orthogonal(), (self.width, self.width))
    w_in = self.param("w_in", nn.initializers.lecun_normal(), (d, self.width))
    n_bias = self.width // 2 if self.activation == "modrelu_split" else self.width
    bias = self.param("bias", nn.initializers.constant(-0.01), (n_bias,))
    x_tm = jnp.swapaxes(x, 0, 1)
    h0 = jnp.zeros((x.shape[0], self.width), x.dtype)
    if layers.IN_LOOP_RATIO * d <= self.width:
      _, hs = fused.rnn_scan(kernel, x_tm, h0, bias, activation=self.activation,
                             input_kernel=w_in)
    else:
      _, hs = fused.rnn_scan(kernel, x_tm @ w_in, h0, bias, activation=self.activation)
    return jnp.swapaxes(hs, 0, 1)


def entries(cell: str, n: int, steps: int, batch: int, input_size: int) -> dict:
  """``{label: (fn, state)}`` for :func:`timing.time_interleaved`."""
  x = jax.random.normal(jax.random.key(2), (batch, steps, input_size))
  c = build(cell, n)
  width = getattr(c, "state_size", n)
  out = {
      "cell": training_step(layers.Recurrent(c, fused=True), x),
      "fixed kernel, complex modReLU": training_step(
          FixedKernelScan(width, "modrelu_split"), x),
      "fixed kernel, tanh": training_step(FixedKernelScan(width, "tanh"), x),
      "floor": training_step(layers.Recurrent(build(FLOOR, width), fused=True), x),
  }
  prep = prepare_step(build(cell, n), input_size)
  if prep is not None:
    out["prepare"] = prep
  return out


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cells", nargs="+", default=["urnn", "eurnn", "fcurnn"])
  parser.add_argument("--n", nargs="+", type=int, default=[128, 256])
  parser.add_argument("--T", nargs="+", type=int, default=[200])
  parser.add_argument("--batch", nargs="+", type=int, default=[10])
  parser.add_argument("--input-size", type=int, default=16)
  parser.add_argument("--repeats", type=int, default=9)
  parser.add_argument("--warmup", type=int, default=1)
  args = parser.parse_args(argv)
  labels = ["cell", "fixed kernel, complex modReLU", "fixed kernel, tanh", "floor"]
  print(f"jax {jax.__version__} on {jax.devices()[0].device_kind}; median ms of "
        f"{args.repeats} interleaved training iterations (ratio to the floor at the state "
        f"width 2n); input size {args.input_size}\n")
  print("| cell | n | T | batch | " + " | ".join(labels) + " | prepare alone |\n"
        "|---|---:|---:|---:|" + "---:|" * (len(labels) + 1))
  for cell in args.cells:
    for n in args.n:
      for steps in args.T:
        for batch in args.batch:
          res = time_interleaved(entries(cell, n, steps, batch, args.input_size),
                                 args.repeats, args.warmup + 1)
          floor = res["floor"].median_ms
          cols = [f"{res[k].median_ms:.2f} ({res[k].median_ms / floor:.2f})" for k in labels]
          prep = res.get("prepare")
          prep = "-" if prep is None else f"{prep.median_ms / PREPARE_INNER:.2f}"
          print(f"| {cell} | {n} | {steps} | {batch} | " + " | ".join(cols) + f" | {prep} |",
                flush=True)
  return 0


if __name__ == "__main__":
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/cells.py
  sys.exit(main())
