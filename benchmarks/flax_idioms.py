"""Benchmark: every cell inside Flax's own idioms, per step against prepared once.

The setting is an encoder-decoder written the way the Flax examples write one: an
``nn.RNN`` encoder over ``--enc-steps`` steps, and an ``nn.RNN`` decoder over
``--dec-steps`` steps whose cell is a user's cell (:class:`UserCell`) that calls ours and
adds a readout of its own; softmax cross-entropy on random labels, Adam, one jitted
training iteration (forward, backward, update) timed. Each cell runs in four forms:

* ``nn.RNN``: the cells as they are, so the matrix function (``expm``, Cayley solve,
  ``D_V``, ...) and its derivative run at every step;
* ``prepared``: the same model with ``cell.prepared()``
  (:meth:`lvf_jax.cells.StructuredCell.prepared`), the matrix function once per call;
* ``Recurrent``: :class:`lvf_jax.layers.Recurrent` for encoder and decoder (the readout
  after the loop), the library's own layer;
* ``step only``: the prepared model with the prepared arrays given as inputs (and
  differentiated), so no matrix function runs at all: the cost of the steps alone.

beside ``prepare``, the forward and backward pass of one cell's ``prepare`` alone
(:func:`prepare_step`), and the ``floor``: the tanh RNN in the ``nn.RNN`` form at the
cell's state width. The verdict of a cell is ``prepared <= 1.1 x budget`` with ``budget =
step only + 2 x prepare`` (two cells, each prepared once per iteration); for the one-kernel
cells with a real state the ``step only`` time is the tanh floor's, so the budget is the
floor plus the two matrix functions. Each cell's entries are timed interleaved
(``benchmarks/timing.py``). The verdict (:func:`paired_verdict`) reads the ratio of each
repetition, whose entries share its machine load, and says ``within`` or ``over`` only where
the 95 % interval of the median ratio lies on one side of the threshold (``undecided``
otherwise); :func:`verdict` applies the same threshold to each entry's fastest iteration,
kept beside it with the medians and every repetition's seconds in the records. Run as a
script it sets ``OPENBLAS_NUM_THREADS=1`` unless set::

    python benchmarks/flax_idioms.py --n 512 --batch 128 --out table.md --json records.json
    python benchmarks/flax_idioms.py --page records.json [other.json ...] --doc page.md

``--page`` writes the documentation page from a record alone (:func:`page`): the table and
every number of its summary.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import shlex
import sys
from typing import Any, Callable, Optional

import jax
import optax
from flax import linen as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cells import build, runs_at  # noqa: E402
import matrix_function  # noqa: E402  (benchmarks/matrix_function.py)
from timing import (command_line, cpu_model, git_commit, measured_on,  # noqa: E402
                    median_interval, time_interleaved)

from lvf_jax import cells as cells_lib  # noqa: E402
from lvf_jax import layers  # noqa: E402

FORMS = ("nn.RNN", "prepared", "Recurrent", "step only")
FLOOR = "rnn"
SLACK = 1.1


class UserCell(nn.RNNCellBase):
  """A user's decoder cell: ours, then a readout of its own at every step."""

  cell: Any
  vocab: int

  @nn.compact
  def __call__(self, carry, x):
    carry, y = self.cell(carry, x)
    return carry, nn.Dense(self.vocab, name="readout")(y)

  @property
  def num_feature_axes(self) -> int:
    return 1


class EncoderDecoder(nn.Module):
  """The benchmark's model in one of :data:`FORMS` (same parameter tree in every form)."""

  make: Callable[..., Any]
  form: str
  vocab: int

  @nn.compact
  def __call__(self, x, y, preps: Optional[tuple] = None):
    enc, dec = self.make(name="enc"), self.make(name="dec")
    if self.form == "Recurrent":
      carry, _ = layers.Recurrent(enc, return_carry=True)(x)
      out = layers.Recurrent(dec)(y, initial_carry=carry)
      return nn.Dense(self.vocab, name="readout")(out)
    if self.form == "prepared":
      enc, dec = enc.prepared(), dec.prepared()
    elif self.form == "step only":
      enc = cells_lib.PreparedCell(enc, preps[0], parent=None)
      dec = cells_lib.PreparedCell(dec, preps[1], parent=None)
    carry, _ = nn.RNN(enc, return_carry=True)(x)
    return nn.RNN(UserCell(dec, self.vocab))(y, initial_carry=carry)


def data(batch: int, enc_steps: int, dec_steps: int, vocab: int):
  """Random encoder / decoder inputs ``(batch, steps, vocab)`` and decoder labels."""
  x = jax.random.normal(jax.random.key(2), (batch, enc_steps, vocab))
  y = jax.random.normal(jax.random.key(3), (batch, dec_steps, vocab))
  labels = jax.random.randint(jax.random.key(4), (batch, dec_steps), 0, vocab)
  return x, y, labels


def _preps(make, params, x):
  """The encoder's and decoder's ``prepare()`` outputs for ``params`` (float32)."""

  def one(name):
    cell = make()
    return cell.apply({"params": params[name]},
                      method=lambda c: c.prepare(dtype=x.dtype))

  return one("enc"), one("dec")


def training_step(make, form: str, batch: tuple, vocab: int, params=None):
  """``(fn, state, params)``: one jitted Adam iteration of the model in ``form``;
  ``params`` (default: initialised in the ``nn.RNN`` form) are shared by the forms other
  than ``Recurrent``, which initialises its own (its readout sits outside the loop)."""
  x, y, labels = batch
  model = EncoderDecoder(make, form, vocab)
  if params is None or form == "Recurrent":  # Recurrent: the readout sits elsewhere
    init_form = "Recurrent" if form == "Recurrent" else "nn.RNN"
    params = jax.jit(EncoderDecoder(make, init_form, vocab).init)(
        jax.random.key(0), x, y)["params"]
  trained = (params, _preps(make, params, x)) if form == "step only" else (params, None)
  tx = optax.adam(1e-3)

  def loss_fn(trained):
    p, preps = trained
    logits = model.apply({"params": p}, x, y, preps)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

  @jax.jit
  def step(state):
    trained, opt = state
    grads = jax.grad(loss_fn)(trained)
    with jax.numpy_dtype_promotion("standard"):  # optax's step count is an int
      updates, opt = tx.update(grads, opt, trained)
    return optax.apply_updates(trained, updates), opt

  return step, (trained, tx.init(trained)), params


def prepare_step(make, params, dtype):
  """``(fn, state)``: one jitted forward and backward pass of the encoder cell's
  ``prepare`` alone (:func:`matrix_function.prepare_step`)."""
  return matrix_function.prepare_step(make(), params["enc"], dtype)


def factory(name: str, n: int, options: Optional[dict] = None) -> Callable[..., Any]:
  """``make(**kw)``: the cell of row ``name`` at ``n`` (as ``benchmarks/cells.py`` builds
  it) with its attributes in ``options`` replaced, and Flax's ``name`` / ``parent``
  keywords passed through (a fresh module, so that the module that calls ``make`` adopts
  it)."""
  cell = build(name, n)
  fields = {f.name: getattr(cell, f.name) for f in dataclasses.fields(cell)
            if f.name not in ("features", "parent", "name")}
  unknown = sorted(set(options or {}) - set(fields))
  if unknown:
    raise ValueError(f"--cell-option {', '.join(unknown)}: not an attribute of "
                     f"{type(cell).__name__} (cell {name!r}); allowed: "
                     f"{', '.join(sorted(fields))}.")
  fields.update(options or {})
  return lambda **kw: type(cell)(n, **fields, **kw)


def cell_options(pairs: list[str]) -> dict:
  """``{'key': value}`` from ``--cell-option key=value`` arguments (values read as Python
  literals where they parse, else kept as strings)."""
  options = {}
  for pair in pairs:
    key, sep, text = pair.partition("=")
    if not sep or not key:
      raise ValueError(f"--cell-option must be KEY=VALUE; got {pair!r}.")
    try:
      options[key] = ast.literal_eval(text)
    except (ValueError, SyntaxError):
      options[key] = text
  return options


def state_width(name: str, n: int) -> int:
  return getattr(build(name, n), "state_size", n)


def measure(name: str, args, batch) -> tuple[dict, dict, dict]:
  """``(minimum, median, seconds)``: milliseconds of every form of cell ``name``, its
  ``prepare`` and the floor, timed interleaved, and the seconds of each repetition."""
  make = factory(name, args.n, cell_options(args.cell_option))
  width = state_width(name, args.n)
  entries, params = {}, None
  for form in args.forms:
    fn, state, p = training_step(make, form, batch, args.vocab, params)
    params = params if form == "Recurrent" else p
    entries[form] = (fn, state)
  fn, state, _ = training_step(factory(FLOOR, width), "nn.RNN", batch, args.vocab)
  entries["floor"] = (fn, state)
  entries["prepare"] = prepare_step(make, params, batch[0].dtype)
  timed = time_interleaved(entries, args.repeats, args.warmup + 1, label=f"{name}: ")
  return ({key: t.min_ms for key, t in timed.items()},
          {key: t.median_ms for key, t in timed.items()},
          {key: t.seconds for key, t in timed.items()})


def verdict(ms: dict) -> dict:
  """``budget = step only + 2 x prepare`` and whether ``prepared <= SLACK x budget``."""
  if "prepared" not in ms or "step only" not in ms:
    return {}
  budget = ms["step only"] + 2 * ms.get("prepare", 0.0)
  out = {"budget": budget, "prepared / budget": ms["prepared"] / budget,
         "within": ms["prepared"] <= SLACK * budget}
  if "Recurrent" in ms:
    out["prepared / Recurrent"] = ms["prepared"] / ms["Recurrent"]
  return out


PAIRED = ("prepared", "step only", "prepare")


def paired_verdict(seconds: dict, slack: float = SLACK) -> dict:
  """The verdict read from each repetition's own ratio ``prepared / (step only + 2 x
  prepare)`` (one repetition times the entries back to back, so they share its load): the
  median ratio with its 95 % distribution-free interval (:func:`timing.median_interval`),
  ``'within'`` where the interval lies at or below ``slack``, ``'over'`` where it lies above,
  ``'undecided'`` where it contains ``slack`` or the repetitions are too few for one."""
  if not all(k in seconds for k in PAIRED):
    return {}
  ratios = [p / (s + 2 * q) for p, s, q in zip(*(seconds[k] for k in PAIRED))]
  interval = median_interval(ratios)
  if interval is None:
    return {"paired": {"repetitions": len(ratios), "verdict": "undecided"}}
  median, low, high = interval
  verdict = "within" if high <= slack else "over" if low > slack else "undecided"
  return {"paired": {"median": median, "low": low, "high": high,
                     "repetitions": len(ratios), "verdict": verdict}}


def _paired_text(cell: dict) -> str:
  p = cell.get("paired")
  if p is None:
    return "- | -"
  if "median" not in p:
    return f"- | {p['verdict']}"
  return f"{p['median']:.2f} ({p['low']:.2f}-{p['high']:.2f}) | {p['verdict']}"


def _row(name: str, width: int, ms: dict, judged: dict) -> str:
  fmt = lambda k, src=ms: "-" if k not in src else f"{src[k]:.1f}"  # noqa: E731
  ratio = lambda k: "-" if k not in judged else f"{judged[k]:.2f}"  # noqa: E731
  within = {True: "yes", False: "**no**"}.get(judged.get("within"), "-")
  return (f"| {name} | {width} | {fmt('nn.RNN')} | {fmt('prepared')} | {fmt('Recurrent')} | "
          f"{fmt('step only')} | {fmt('prepare')} | {fmt('floor')} | "
          f"{fmt('budget', judged)} | {ratio('prepared / budget')} | {within} | "
          f"{ratio('prepared / Recurrent')} | {_paired_text(judged)} |")


HEADER = ("| cell | state width | nn.RNN ms | prepared ms | Recurrent ms | step only ms | "
          "prepare ms | floor ms | budget ms | prepared / budget | within 1.1 x | "
          "prepared / Recurrent | paired ratio (95 % interval) | paired verdict |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|")


INTRO = """# Cells inside Flax's idioms: per step against prepared once

The encoder-decoder of the Flax examples: an `nn.RNN` encoder and an `nn.RNN` decoder whose
cell is a user's cell that calls ours and adds its own readout, Adam. Forms: `nn.RNN` (the
plain cells, matrix function at every step), `prepared` (`cell.prepared()`), `Recurrent` (the
library layer), `step only` (the prepared arrays given as inputs: no matrix function at all);
`prepare` is one cell's matrix function forward and backward alone, under a loss with an
unstructured cotangent; `floor` is the tanh RNN at the cell's state width in the `nn.RNN`
form. Verdict: `prepared <= {slack} x (step only + 2 x prepare)`, read from each
repetition's own ratio (the entries of a repetition run back to back): `within` where the
95 % interval of the median ratio lies at or below {slack}, `over` where it lies above,
`undecided` where it contains {slack}; beside it the same test on each entry's fastest
iteration (`benchmarks/flax_idioms.py`; records `docs/results/flax_idioms*.json`; this page
is written from them by `python benchmarks/flax_idioms.py --page {records} --doc
docs/FLAX_IDIOMS.md`).
"""

#: The records docs/FLAX_IDIOMS.md is written from: the full run, then the other runs.
RECORDS = tuple(f"docs/results/flax_idioms{suffix}.json"
                for suffix in ("", "_focused", "_scheduler_default", "_scheduler_off",
                               "_nnrnn_matrix", "_henaff", "_earlier"))


def _within(judged: dict) -> tuple[int, int, str]:
  """``(k, N, 'cell ratio, ...')``: of the N per-cell verdicts (:func:`verdict`), how many
  are within and those past it, worst first (``'none'``)."""
  judged = {k: j for k, j in judged.items() if "within" in j}
  late = sorted((k for k, j in judged.items() if not j["within"]),
                key=lambda k: -judged[k]["prepared / budget"])
  past = ", ".join(f"{k} {judged[k]['prepared / budget']:.2f}" for k in late) or "none"
  return sum(j["within"] for j in judged.values()), len(judged), past


def _paired_line(cells: dict, name_within: bool = False) -> list[str]:
  """The paired verdicts (:func:`paired_verdict`) of the cells that have them, counted, with
  the cells that are not within (and with ``name_within`` those within) named, their median
  ratio and interval."""
  paired = {k: c["paired"] for k, c in cells.items() if "paired" in c}
  if not paired:
    return []

  def named(verdict):
    keys = sorted((k for k, p in paired.items() if p["verdict"] == verdict),
                  key=lambda k: -paired[k].get("median", 0.0))
    return ", ".join(f"{k} {paired[k]['median']:.2f} ({paired[k]['low']:.2f}-"
                     f"{paired[k]['high']:.2f})" if "median" in paired[k] else k
                     for k in keys) or "none"

  within = sum(p["verdict"] == "within" for p in paired.values())
  listed = f" ({named('within')})" if name_within and within else ""
  return [f"By each repetition's own ratio (its median and 95 % interval): {within} of the "
          f"{len(paired)} cells within{listed}; over: {named('over')}; undecided: "
          f"{named('undecided')}."]


def summary(cells: dict, slack: float) -> str:
  """The page's findings, every number read from ``cells`` (the record's per-cell entries)."""
  k, n, past = _within(cells)
  lines = _paired_line(cells)
  lines.append(f"By the fastest iterations: {k} of the {n} cells are within {slack}x their "
               f"budget; past it: {past}.")
  if "exprnn" in cells and "floor" in cells["exprnn"]["ms"]:
    e = cells["exprnn"]
    lines.append(f"Per step, the expRNN costs {e['ms']['nn.RNN'] / e['ms']['floor']:.0f}x the "
                 f"tanh floor; prepared, {e['prepared / budget']:.2f} of its budget.")
  ratios = [c["prepared / Recurrent"] for c in cells.values() if "prepared / Recurrent" in c]
  if ratios:
    lines.append(f"`prepared` takes {min(ratios):.2f}-{max(ratios):.2f} of the time of "
                 f"`Recurrent` ({sum(r < 1 for r in ratios)} of {len(ratios)} cells faster).")
  medians = {k: verdict(c["median_ms"]) for k, c in cells.items()}
  k, n, past = _within(medians)
  lines.append(f"Read with the medians of the same iterations instead of the minima: "
               f"{k} of {n} within; past it: {past}.")
  lines.append("The fastest and the median iterations move by more than the 10 % threshold "
               "on a shared machine; the paired interval says where the repetitions cannot "
               "decide. `tests/test_flax_idioms.py` checks what noise cannot move: no `n x n` "
               "product is left inside the time loops of the prepared expRNN's training step, and "
               "no fusion of the prepared expRNN's or nnRNN's Adam step re-evaluates the "
               "cotangent of `expm`'s input transposed (`expm_taylor` stores it first).")
  return "\n\n".join(lines)


def _run_line(record: dict) -> str:
  """One other run of the benchmark: when, at which commit, with which command, and its
  verdicts (each repetition's own ratio where recorded, then the fastest iterations)."""
  meta = record["meta"]
  commit = meta.split("commit ")[1].split(",")[0] if "commit " in meta else "unknown"
  command = meta.split("Command: ")[1].splitlines()[0] if "Command: " in meta else None
  k, n, past = _within(record["cells"])
  paired = " ".join(_paired_line(record["cells"], name_within=True))
  return (f"- {meta.split(' on ')[0]}, commit {commit}, CPU "
          f"{record.get('cpu', 'not recorded')}"
          + (f", `{command}`" if command else "") + ": "
          + (f"{paired} " if paired else "")
          + f"By the fastest iterations: {k} of {n} within; past it: {past}.")


def page(record: dict, others: tuple = ()) -> str:
  """``docs/FLAX_IDIOMS.md`` from a record of :func:`main` (``--json``) alone, with one line
  for each of the ``others`` records of the same benchmark (other runs: a subset of the
  cells with more repetitions, earlier runs)."""
  cells, slack = record["cells"], record["slack"]
  rows = [_row(k, c["state_width"], c["ms"], c) for k, c in cells.items()]
  text = (INTRO.format(slack=slack, records=" ".join(RECORDS)) + "\n" + record["meta"] + "\n" +
          f"CPU: {record.get('cpu', 'not recorded')}.\n\n" + HEADER + "\n" +
          "\n".join(rows) + "\n\n" + summary(cells, slack) + "\n")
  if others:
    text += ("\nOther runs of the same benchmark (their records beside this one):\n\n"
             + "\n".join(_run_line(r) for r in others) + "\n")
  return text


def _command(argv) -> str:
  """The command as run, with the ``XLA_FLAGS`` it ran under (they change XLA's schedule)."""
  command = command_line("benchmarks/flax_idioms.py", argv)
  flags = os.environ.get("XLA_FLAGS")
  return f"XLA_FLAGS={shlex.quote(flags)} {command}" if flags else command


def _write(args, argv, rows: list, records: dict) -> None:
  meta = (f"{measured_on()}, commit {git_commit()}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}; n = {args.n}, batch {args.batch}, "
          f"encoder {args.enc_steps} steps, decoder {args.dec_steps} steps, vocabulary "
          f"{args.vocab}, Adam; minimum over {args.repeats} interleaved jitted training "
          f"iterations (the medians are in the records).\n"
          f"Command: {_command(argv)}\n\n")
  if args.out:
    with open(args.out, "w") as f:
      f.write(meta + HEADER + "\n" + "\n".join(rows) + "\n")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"meta": meta.strip(), "cpu": cpu_model(), "slack": SLACK,
                 "cells": records}, f, indent=1)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  names = sorted(cells_lib.CELLS)
  parser.add_argument("--cells", nargs="+", default=names, choices=names)
  parser.add_argument("--forms", nargs="+", default=list(FORMS), choices=FORMS)
  parser.add_argument("--cell-option", action="append", default=[], metavar="KEY=VALUE",
                      help="replace an attribute of every cell measured (not the floor), "
                           "e.g. orthogonal_param=matrix; repeatable")
  parser.add_argument("--n", type=int, default=512)
  parser.add_argument("--batch", type=int, default=128)
  parser.add_argument("--enc-steps", type=int, default=7)
  parser.add_argument("--dec-steps", type=int, default=6)
  parser.add_argument("--vocab", type=int, default=16)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--warmup", type=int, default=1)
  parser.add_argument("--out", default=None, help="markdown table")
  parser.add_argument("--json", default=None, help="records: times and verdicts per cell")
  parser.add_argument("--page", nargs="+", default=None,
                      help="a record (--json) to write --doc from, then other runs' records")
  parser.add_argument("--doc", default=None, help="the documentation page --page writes")
  args = parser.parse_args(argv)
  if args.page:
    records = []
    for path in args.page:
      with open(path) as f:
        records.append(json.load(f))
    with open(args.doc, "w") as out:
      out.write(page(records[0], tuple(records[1:])))
    return 0
  batch = data(args.batch, args.enc_steps, args.dec_steps, args.vocab)
  print(HEADER, flush=True)
  rows, records = [], {}
  for name in args.cells:
    if not runs_at(name, args.n):
      continue
    ms, median, seconds = measure(name, args, batch)
    judged = {**verdict(ms), **paired_verdict(seconds)}
    records[name] = {"state_width": state_width(name, args.n), "ms": ms, "median_ms": median,
                     "seconds": seconds, **judged}
    rows.append(_row(name, state_width(name, args.n), ms, judged))
    print(rows[-1], flush=True)
    _write(args, argv, rows, records)  # after every cell: a crash loses at most one
  return 0


if __name__ == "__main__":
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
  sys.exit(main())
