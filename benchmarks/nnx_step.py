"""Benchmark: one training step of every cell through its NNX front end against Linen.

The model is a tagger written the way each API's documentation writes one: a prepared
cell (``cell.prepared()``: the matrix function once per call) under ``nnx.RNN`` or
``nn.RNN``, a linear read-out, softmax cross-entropy and Adam, from the same parameters.
The NNX step is ``jax.jit`` over the ``nnx.split`` state (Flax's performance guide: no
graph traversal inside the timed call); the Linen step is ``jax.jit`` over the parameter
tree. Both are timed interleaved (``benchmarks/timing.py``) and the table gives each
cell's median ratio NNX / Linen. Run as a script it sets ``OPENBLAS_NUM_THREADS=1``::

    python benchmarks/nnx_step.py --n 128 --T 100 --batch 32 --out table.md
"""

from __future__ import annotations

import argparse
import os
import sys

import flax.linen as nn
import jax
import optax
from flax import nnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import command_line, git_commit, measured_on, time_interleaved  # noqa: E402

from lvf_jax import cells as cells_lib  # noqa: E402
from lvf_jax import nnx as lnnx  # noqa: E402

VOCAB = 8


class NNXTagger(nnx.Module):
  def __init__(self, name: str, n: int, rngs: nnx.Rngs):
    self.cell = lnnx.NNX_CELLS[name](VOCAB, n, rngs=rngs)
    width = getattr(self.cell.definition, "state_size", n)  # [Re h | Im h]: 2n
    self.out = nnx.Linear(width, VOCAB, rngs=rngs)

  def __call__(self, x):
    return self.out(nnx.RNN(self.cell.prepared())(x))


class LinenTagger(nn.Module):
  name_: str
  n: int

  @nn.compact
  def __call__(self, x):
    cell = cells_lib.CELLS[self.name_](self.n, name="cell")
    return nn.Dense(VOCAB, name="out")(nn.RNN(cell.prepared())(x))


def _loss(logits, labels):
  return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def nnx_step(model: NNXTagger, x, labels):
  """``(fn, state)``: one Adam step of the NNX model, jitted over its split state."""
  opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
  graphdef, state = nnx.split((model, opt))

  @jax.jit
  def step(state):
    model, opt = nnx.merge(graphdef, state)
    grads = nnx.grad(lambda m: _loss(m(x), labels))(model)
    with jax.numpy_dtype_promotion("standard"):  # optax's step count is an int
      opt.update(model, grads)
    return nnx.state((model, opt))

  return step, state


def linen_step(model: NNXTagger, name: str, n: int, x, labels):
  """``(fn, state)``: the Linen tagger's Adam step from the NNX model's parameters."""
  params = {"cell": lnnx.to_linen(model.cell)["params"],
            "out": {"kernel": model.out.kernel[...], "bias": model.out.bias[...]}}
  linen, tx = LinenTagger(name, n), optax.adam(1e-3)

  @jax.jit
  def step(state):
    p, opt_state = state
    grads = jax.grad(lambda q: _loss(linen.apply({"params": q}, x), labels))(p)
    with jax.numpy_dtype_promotion("standard"):
      updates, opt_state = tx.update(grads, opt_state, p)
    return optax.apply_updates(p, updates), opt_state

  return step, (params, tx.init(params))


def measure(name: str, n: int, steps: int, batch: int, repeats: int) -> dict:
  """Median milliseconds of both steps of cell ``name``, timed interleaved."""
  x = jax.random.normal(jax.random.key(1), (batch, steps, VOCAB))
  labels = jax.random.randint(jax.random.key(2), (batch, steps), 0, VOCAB)
  model = NNXTagger(name, n, nnx.Rngs(0))
  entries = {"nnx": nnx_step(model, x, labels), "linen": linen_step(model, name, n, x, labels)}
  timed = time_interleaved(entries, repeats, 2)
  return {key: t.median_ms for key, t in timed.items()}


def table(rows: dict) -> str:
  lines = ["| cell | Linen ms | NNX ms | NNX / Linen |", "|---|---:|---:|---:|"]
  lines += [f"| {name} | {ms['linen']:.2f} | {ms['nnx']:.2f} | {ms['nnx'] / ms['linen']:.2f} |"
            for name, ms in rows.items()]
  return "\n".join(lines)


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--cells", nargs="+", default=sorted(cells_lib.CELLS))
  p.add_argument("--n", type=int, default=128)
  p.add_argument("--T", type=int, default=100)
  p.add_argument("--batch", type=int, default=32)
  p.add_argument("--repeats", type=int, default=10)
  p.add_argument("--out")
  args = p.parse_args(argv)
  rows = {}
  for name in args.cells:
    rows[name] = measure(name, args.n, args.T, args.batch, args.repeats)
    print(f"{name}: {rows[name]}", flush=True)
  text = (f"{measured_on()}, commit {git_commit()}; median of {args.repeats} interleaved "
          f"iterations.\n"
          f"Command: {command_line('benchmarks/nnx_step.py', argv)}\n\n{table(rows)}\n")
  print(text)
  if args.out:
    with open(args.out, "w") as f:
      f.write(text)
  return 0


if __name__ == "__main__":
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
  sys.exit(main())
