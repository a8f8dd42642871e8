"""The lvfRNN trained as a user would: one ``optax.adam`` for every weight, beside the tanh RNN.

Two small tasks, each model built from ``cells.<Cell>(n).prepared()`` under ``nn.RNN``:

* ``copy``: the copy task (Arjovsky et al. 2016) with delay ``T = 10`` and ``K = 5`` symbols,
  a per-step predictor; accuracy over the ``K`` recalled symbols.
* ``addition``: an encoder-decoder that reads two 3-digit numbers as characters
  (``"123+456"``) and writes their 4-digit sum with teacher forcing; the fraction of the
  sum's digits right.

Each run reports the loss and accuracy averaged over its last tenth of steps, and the same
for the first tenth. The lvfRNN runs with each field parametrisation (``'natural'``, the
default, and ``'paper'``, Azencot et al. 2021, arXiv:2102.09589, eq. 8) and each integrator.

``python -m experiments.lvf_single_optimizer`` adds its runs to
``docs/results/lvf_single_optimizer.json`` (each invocation with its command, commit, machine
and date) and writes the tables of every recorded invocation into ``docs/geometry.md``
(``--report-only``: from the record alone).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.reproduce import archive, provenance
from lvf_jax import cells
from lvf_jax import geometry
from lvf_jax.tasks.copying import CopyTask

RECORD = os.path.join("docs", "results", "lvf_single_optimizer.json")
PAGE = os.path.join("docs", "geometry.md")
START, END = "<!-- lvf_single_optimizer:start -->", "<!-- lvf_single_optimizer:end -->"
COPY = CopyTask(T=10, K=5)
DIGITS = 3  # addition: two 3-digit numbers, a 4-digit sum
VOCAB = 12  # digits 0-9, '+' (10), the decoder's start symbol (11)


def cayley_haar(key, shape, dtype=jnp.float32):
  """A skew ``D = 2 cayley(Q)``, ``Q`` Haar: the midpoint map at ``tau = 1`` gives ``C = Q``
  (the Cayley transform is an involution), where the default field gives ``Q`` under
  ``'exp'``."""
  q = geometry.expm(geometry.haar_skew()(key, shape, dtype))
  return 2 * geometry.cayley(q)


#: Initial fields of ``make_cell``'s ``init``: ``W = -D / 2`` for the skew ``D`` drawn.
FIELDS = {"cayley_haar": lambda: geometry.rotation_field(cayley_haar)}


class RatedLVF(cells.LVFRNNCell):
  """The natural parametrisation with the stored field scaled by ``rate``: ``V = rate
  (P(W) + G(a))``, started at the same field (``W / rate``), so one Adam step moves ``V``
  ``rate`` times as far: the field's learning rate relative to the other weights'."""
  rate: float = 1.0

  def field(self):
    return geometry.with_divergence(self.rate * self.vector_field, self.rate * self.divergence)


def _scaled(init, factor: float):
  return lambda key, shape, dtype=jnp.float32: init(key, shape, dtype) * factor


def make_cell(model: str, n: int, integrator: str = "", parametrization: str = "natural",
              tau: float = 1.0, init: str = "", rate: float = 1.0):
  """``'tanh'`` (the tanh RNN) or ``'lvf'`` (the lvfRNN with tanh; ``integrator`` and
  ``init`` empty: the cell's defaults, ``init`` else a key of :data:`FIELDS`; ``rate``
  other than 1: :class:`RatedLVF`)."""
  if model == "tanh":
    return cells.TanhRNNCell(n)
  chosen = {"integrator": integrator} if integrator else {}
  field_init = FIELDS[init]() if init else geometry.rotation_field()
  if init or rate != 1:
    chosen["vector_field_init"] = _scaled(field_init, 1 / rate)
  if rate != 1:
    return RatedLVF(n, parametrization=parametrization, tau=tau, rate=rate, **chosen)
  return cells.LVFRNNCell(n, parametrization=parametrization, tau=tau, **chosen)


class Tagger(nn.Module):
  """One recurrent layer and a per-step read-out."""
  cell: dict
  outputs: int

  @nn.compact
  def __call__(self, x):
    return nn.Dense(self.outputs)(nn.RNN(make_cell(**self.cell).prepared())(x))


class Seq2Seq(nn.Module):
  """An encoder and a decoder of the same kind; the decoder starts from the encoder's state."""
  cell: dict

  @nn.compact
  def __call__(self, x, y):
    enc = make_cell(**self.cell).prepared()
    dec = make_cell(**self.cell).prepared()
    carry, _ = nn.RNN(enc, return_carry=True)(x)
    return nn.Dense(10)(nn.RNN(dec)(y, initial_carry=carry))


def _digits(v, m):
  return jnp.stack([(v // 10 ** (m - 1 - i)) % 10 for i in range(m)], -1)


def addition_batch(key, batch: int):
  """One-hot source ``a+b`` and decoder inputs (start, then the sum shifted), sum digits."""
  ka, kb = jax.random.split(key)
  a = jax.random.randint(ka, (batch,), 0, 10 ** DIGITS)
  b = jax.random.randint(kb, (batch,), 0, 10 ** DIGITS)
  src = jnp.concatenate([_digits(a, DIGITS), jnp.full((batch, 1), 10), _digits(b, DIGITS)], -1)
  target = _digits(a + b, DIGITS + 1)
  dec_in = jnp.concatenate([jnp.full((batch, 1), VOCAB - 1), target[:, :-1]], -1)
  return jax.nn.one_hot(src, VOCAB), jax.nn.one_hot(dec_in, VOCAB), target


def _task(task: str, cell: dict, batch: int):
  """``(model, init inputs, loss-and-accuracy of (model, params, key))``."""
  if task == "copy":
    model = Tagger(cell, COPY.output_size)

    def metrics(params, key):
      b = COPY.sample(key, batch)
      m = COPY.metrics(model.apply(params, b.inputs), b)
      return m["loss"], m["accuracy"]
    return model, (COPY.sample(jax.random.key(0), batch).inputs,), metrics
  model = Seq2Seq(cell)

  def metrics(params, key):
    x, y, target = addition_batch(key, batch)
    logits = model.apply(params, x, y)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, target).mean()
    return loss, jnp.mean(jnp.argmax(logits, -1) == target)
  return model, addition_batch(jax.random.key(0), batch)[:2], metrics


def train(task: str, cell: dict, lr: float, steps: int, *, batch: int = 64, seed: int = 0):
  """Trains with one ``optax.adam(lr)``; the mean loss and accuracy of the first and the last
  tenth of the steps (training batches), and whether every loss was finite."""
  model, inputs, metrics = _task(task, cell, batch)
  params = model.init(jax.random.key(seed), *inputs)
  tx = optax.adam(lr)

  @jax.jit
  def step(params, state, key):
    with jax.numpy_dtype_promotion("standard"):  # JAX's default; optax's Adam mixes int, float
      (loss, acc), g = jax.value_and_grad(metrics, has_aux=True)(params, key)
      updates, state = tx.update(g, state, params)
      return optax.apply_updates(params, updates), state, loss, acc

  state, losses, accs = tx.init(params), [], []
  for key in jax.random.split(jax.random.key(seed + 1), steps):
    params, state, loss, acc = step(params, state, key)
    losses.append(loss)
    accs.append(acc)
  losses, accs = np.asarray(losses, np.float64), np.asarray(accs, np.float64)
  k = max(steps // 10, 1)
  return {"first_loss": float(np.mean(losses[:k])), "last_loss": float(np.mean(losses[-k:])),
          "first_accuracy": float(np.mean(accs[:k])), "last_accuracy": float(np.mean(accs[-k:])),
          "finite": bool(np.all(np.isfinite(losses)))}


VARIANTS = [dict(model="tanh")] + [
    dict(model="lvf", integrator=i, parametrization=p)
    for p in ("natural", "paper") for i in ("exp", "midpoint", "euler")]


def run(tasks, sizes, lrs, steps: int, variants=None, seeds=(0,)) -> list[dict]:
  """Every variant (default :data:`VARIANTS`) on every task, size, learning rate and seed."""
  rows = []
  for task in tasks:
    for n in sizes:
      for lr in lrs:
        for v in variants or VARIANTS:
          for seed in seeds:
            t0 = time.time()
            r = train(task, dict(v, n=n), lr, steps, seed=seed)
            rows.append(dict(task=task, n=n, lr=lr, steps=steps, **v, **r, seed=seed,
                             seconds=round(time.time() - t0, 1)))
            print(table([rows[-1]]).splitlines()[-1], flush=True)
  return rows


def table(rows: list[dict]) -> str:
  """The record's rows as a Markdown table."""
  out = ["| task | n | Adam lr | steps | seed | model | parametrisation | integrator | tau | "
         "initial field | field rate | first loss | last loss | last accuracy |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
  for r in rows:
    lvf = r["model"] == "lvf"
    cell = ((r.get("parametrization", "natural"), r.get("integrator", "—"), r.get("tau", 1),
             r.get("init") or "default", r.get("rate", 1)) if lvf else ("—",) * 5)
    out.append(f"| {r['task']} | {r['n']} | {r['lr']:g} | {r['steps']} | {r.get('seed', 0)} | "
               f"{'lvfRNN' if lvf else 'tanh RNN'} | {' | '.join(map(str, cell))} | "
               f"{r['first_loss']:.3g} | {r['last_loss']:.3g}"
               f"{'' if r['finite'] else ' (non-finite)'} | {r['last_accuracy']:.3f} |")
  return "\n".join(out)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--tasks", nargs="+", default=["copy", "addition"])
  p.add_argument("--sizes", nargs="+", type=int, default=[64, 512])
  p.add_argument("--lrs", nargs="+", type=float, default=[1e-3, 3e-3])
  p.add_argument("--steps", type=int, default=300)
  p.add_argument("--variants", type=json.loads, default=None,
                  help="JSON list of make_cell arguments without n (default: VARIANTS)")
  p.add_argument("--seeds", nargs="+", type=int, default=[0])
  p.add_argument("--report-only", action="store_true")
  argv = sys.argv[1:] if argv is None else argv
  args = p.parse_args(argv)
  runs = load()
  if not args.report_only:
    rows = run(args.tasks, args.sizes, args.lrs, args.steps, args.variants, args.seeds)
    runs.append({**provenance.stamp("experiments.lvf_single_optimizer", argv), "rows": rows})
    archive.save(RECORD, {"runs": runs})
  print(report(runs))
  write_page(runs)


def report(runs: list) -> str:
  """Every recorded invocation: its command, commit, machine and date, and its table."""
  return "\n\n".join(f"Run: `{r['command'].strip()}` at {r['commit']}, {r['machine']}, "
                     f"{r['date']}\n\n{table(r['rows'])}" for r in runs)


def write_page(runs: list, path: str = PAGE) -> None:
  """Rewrites the block between :data:`START` and :data:`END` of ``path`` with
  :func:`report`."""
  with open(path) as f:
    text = f.read()
  head, rest = text.split(START, 1)
  with open(path, "w") as f:
    f.write(f"{head}{START}\n{report(runs)}\n{END}{rest.split(END, 1)[1]}")


def load() -> list:
  """The recorded invocations, each ``{command, commit, machine, date, rows}``."""
  return archive.load(RECORD).get("runs", [])


if __name__ == "__main__":
  main()
