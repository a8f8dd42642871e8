"""Benchmark: how a GRU forward scan reads its projected input, median ms per call.

Found in session 10 of issue 3 (docs/RESULTS.md): at batch 128 a GRU inside
``flax.linen.RNN`` trains faster than the fused GRU of ``lvf_jax.layers.Recurrent``, and the
difference sits in the *forward* loop. This script isolates it with plain ``lax.scan``
forward passes (no gradient) of one GRU step, ``a = h K + b``, ``r, z = sigmoid(u_{r,z} +
a_{r,z})``, ``m = tanh(u_m + r a_m)``, ``h' = (1 - z) m + z h``, that differ only in where
``u_t`` comes from:

* ``hoisted``: ``U = X W`` for the whole sequence before the loop (what the layer does),
  step ``t`` reads ``U[t]`` and splits it in three (XLA:CPU fuses that dynamic slice and
  the column slices into the step's elementwise fusion);
* ``hoisted, three arrays``: three projections ``X W_r``, ``X W_z``, ``X W_m`` (no column
  slices of a slice);
* ``hoisted, split before the loop``: ``U = X W`` split into three arrays before the loop
  (one copy of the sequence);
* ``in loop``: ``u_t = x_t W`` inside the step (what ``nn.RNN`` does; a small
  ``(B, m) x (m, 3n)`` product per step);
* ``floor (tanh, hoisted)``: ``h' = tanh(h K_1 + U_1[t])`` for scale;
* ``projection alone``: ``X W`` (the hoisted variants' extra cost before the loop).

Interleaved timing (benchmarks/timing.py). Example::

    python benchmarks/gated_input.py --n 128 --T 200 --batch 128 --input-size 16
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_interleaved  # noqa: E402  (benchmarks/timing.py)


def _gru_step(h, u_r, u_z, u_m, kernel, bias):
  a_r, a_z, a_m = jnp.split(h @ kernel + bias[None, :], 3, axis=-1)
  r = jax.nn.sigmoid(u_r + a_r)
  z = jax.nn.sigmoid(u_z + a_z)
  m = jnp.tanh(u_m + r * a_m)
  return (1.0 - z) * m + z * h


def forwards(n: int, steps: int, batch: int, input_size: int):
  """``(x, {label: f})``: the time-major input and the jitted variants, ``f(x)`` -> output
  (the GRU variants all return the same ``(T, B, n)`` states)."""
  keys = jax.random.split(jax.random.key(0), 4)
  kernel = jax.random.normal(keys[0], (n, 3 * n), jnp.float32) / n ** 0.5
  bias = jnp.zeros((3 * n,), jnp.float32)
  w = jax.random.normal(keys[1], (input_size, 3 * n), jnp.float32) / input_size ** 0.5
  x = jax.random.normal(keys[2], (steps, batch, input_size), jnp.float32)
  h0 = jnp.zeros((batch, n), jnp.float32)

  def scan(body, xs):
    return jax.lax.scan(lambda h, xs_t: (lambda hn: (hn, hn))(body(h, xs_t)), h0, xs)[1]

  def hoisted(x):
    return scan(lambda h, u_t: _gru_step(h, *jnp.split(u_t, 3, axis=-1), kernel, bias), x @ w)

  def hoisted_three(x):
    us = tuple(x @ wj for wj in jnp.split(w, 3, axis=-1))
    return scan(lambda h, u: _gru_step(h, *u, kernel, bias), us)

  def hoisted_split(x):
    return scan(lambda h, u: _gru_step(h, *u, kernel, bias), tuple(jnp.split(x @ w, 3, axis=-1)))

  def in_loop(x):
    return scan(lambda h, x_t: _gru_step(h, *jnp.split(x_t @ w, 3, axis=-1), kernel, bias), x)

  def floor(x):
    return scan(lambda h, u_t: jnp.tanh(h @ kernel[:, :n] + u_t), x @ w[:, :n])

  def projection(x):
    return x @ w

  return x, {label: jax.jit(f) for label, f in (
      ("hoisted", hoisted), ("hoisted, three arrays", hoisted_three),
      ("hoisted, split before the loop", hoisted_split), ("in loop", in_loop),
      ("floor (tanh, hoisted)", floor), ("projection alone", projection))}


def variants(n: int, steps: int, batch: int, input_size: int) -> dict:
  """``{label: (fn, state)}`` for :func:`timing.time_interleaved` (``fn(x) -> x``, blocked)."""
  x, fns = forwards(n, steps, batch, input_size)
  return {label: (lambda s, f=f: (jax.block_until_ready(f(s)), s)[1], x)
          for label, f in fns.items()}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--n", type=int, default=128)
  parser.add_argument("--T", type=int, default=200)
  parser.add_argument("--batch", type=int, default=128)
  parser.add_argument("--input-size", type=int, default=16)
  parser.add_argument("--repeats", type=int, default=9)
  parser.add_argument("--warmup", type=int, default=2)
  args = parser.parse_args(argv)
  res = time_interleaved(variants(args.n, args.T, args.batch, args.input_size), args.repeats,
                         args.warmup)
  ref = res["in loop"].median_ms
  print(f"GRU forward scan, n = {args.n}, T = {args.T}, batch = {args.batch}, input size "
        f"{args.input_size}; jax {jax.__version__} on {jax.devices()[0].device_kind}; median "
        f"(min) of {args.repeats} interleaved calls\n")
  print("| variant | ms | min ms | / in loop | minor page faults / call |\n"
        "|---|---:|---:|---:|---:|")
  for label, t in res.items():
    print(f"| {label} | {t.median_ms:.2f} | {t.min_ms:.2f} | {t.median_ms / ref:.2f} | "
          f"{t.faults_per_call:.0f} |")
  return 0


if __name__ == "__main__":
  sys.exit(main())
