"""Measured seconds per optimiser step of the rows, for the hours a row needs on a CPU.

A row that has not run says why on its page: no data, the budget of a GPU row, or queued;
the last two with the hours its full budget takes on one CPU core, estimated from a step
time measured here: the row's own config (seed 0), its jitted train step on each of the first
:data:`REPEATS` batches, compiled for that batch's shape and then timed, the mean over
them, with the machine's load average beside it (other processes sharing the cores lengthen
a step). ``python -m experiments.reproduce.step_times [tables] [--rows
a,b] [--all]`` measures the rows without a record (``--all``: every runnable row) and
merges them into :data:`PATH`, each with its command, commit, machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Optional

from experiments.reproduce import archive as archive_lib
from experiments.reproduce import presets, provenance, rows
from experiments.reproduce.rows import Row, Table

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "step_times.json")
#: Batches timed, each after a step that compiles its shape.
REPEATS = 3


def measure(row: Row, repeats: int = REPEATS) -> float:
  """Seconds per optimiser step of ``row``'s config, after compilation."""
  import jax  # pylint: disable=g-import-not-at-top
  from lvf_jax.train import builders, loop  # pylint: disable=g-import-not-at-top
  c = presets.preset_config(row)
  pipeline = builders.build_pipeline(c)
  model = builders.build_model(c, pipeline.model_head())
  tx = builders.build_optimizer(c)
  s = loop.TrainSettings.of(c)
  step = jax.jit(loop.make_train_step(model, pipeline, tx, dtriv_every=s.dtriv_every,
                                      dtriv_orthonormalize_every=s.dtriv_orthonormalize_every))
  state = loop.initial_state(c, model, pipeline, tx)

  def batch(i):
    return pipeline.host_batch(i) if pipeline.host_fed else None

  seconds = []
  for i in range(repeats):  # each batch's shape compiled first (host-fed data vary in length)
    b = batch(i)
    state = jax.block_until_ready(step(state, b)[0])
    t0 = time.perf_counter()
    state = jax.block_until_ready(step(state, b)[0])
    seconds.append(time.perf_counter() - t0)
  return sum(seconds) / repeats


def load(path: str = PATH) -> dict:
  """``{'<table>/<row>': entry}`` of the stored step times (``{}`` before any)."""
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    return json.load(f)


def cpu_hours(seconds_per_step: float, steps: int, seeds: int = 1) -> float:
  """Hours of ``seeds`` runs of ``steps`` steps at ``seconds_per_step``."""
  return seconds_per_step * steps * seeds / 3600.0


def wanted(table: Table, row: Row, every: bool) -> bool:
  """Whether ``row`` is measured: it has a config, its data is here, it trains its own runs,
  and (unless ``every``) it has no record in the committed archive."""
  if row.config is None or row.analytic or row.runs_of:
    return False
  if row.blocker and not row.budget_blocked:
    return False
  if every:
    return True
  store = archive_lib.load(archive_lib.path_for(
      provenance.PAGES, table.id))
  return not store.get("rows", {}).get(row.id, {}).get("seeds")


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="python -m experiments.reproduce.step_times",
                              description=__doc__)
  p.add_argument("tables", nargs="*", help="table ids (default: every table)")
  p.add_argument("--rows", default="", help="comma-separated row ids")
  p.add_argument("--all", action="store_true", help="rows with records too")
  return p


def main(argv: Optional[list] = None) -> int:
  args = _parser().parse_args(argv)
  every_table = rows.tables(studies=True)
  tables = [rows.get(t) for t in args.tables] if args.tables else list(every_table.values())
  selected = {r for r in args.rows.split(",") if r}
  stored = load()
  for table in tables:
    for row in table.rows:
      if (selected and row.id not in selected) or not wanted(table, row, args.all):
        continue
      seconds = measure(row)
      stored[f"{table.id}/{row.id}"] = {
          "seconds_per_step": round(seconds, 4), "steps_timed": REPEATS,
          **provenance.stamp("experiments.reproduce.step_times",
                             sys.argv[1:] if argv is None else argv),
          "load": round(os.getloadavg()[0], 1)}
      print(f"step_times: {table.id}/{row.id}: {seconds:.3f} s a step", flush=True)
      archive_lib.save(PATH, dict(sorted(stored.items())))
  return 0


if __name__ == "__main__":
  sys.exit(main())
