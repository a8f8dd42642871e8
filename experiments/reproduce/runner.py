"""Runs rows of the papers' tables and writes one record per seed.

A row runs as ``train_and_evaluate`` of its config (``configs/<file>.py:<preset>`` plus the
row's overrides) in ``<workdir>/<table>/<row>/seed<k>``, under a lock that one process holds
at a time; the training loop resumes from the latest checkpoint, and a finished seed leaves
its record, ``result.json``, there, so running a table again only runs what is missing.

A record holds what a verdict needs (:mod:`experiments.reproduce.verdict`): the metrics the
tables judge at the best validation step (``metrics``), the validation metrics at the last
step (``last``), the thinned learning curve (``curve``), the steps run and the budget, the
task's no-memory loss, the config and its overrides, and the commit, machine, date and
command of the run; for a row that names measurements (``Row.diagnostics``), their values
after training (:mod:`experiments.reproduce.diagnostics`). The page writer
(:mod:`experiments.reproduce.pages`) reads the records.
"""

from __future__ import annotations


import contextlib
import dataclasses
import json
import math
import os
import shlex
import time
from typing import Iterator, Optional

from experiments.reproduce import archive as archive_lib
from experiments.reproduce import rows as rows_lib
from experiments.reproduce import floors as floors_lib
from experiments.reproduce import verdict as verdict_lib
from experiments.reproduce.presets import load_config, preset_config, task_name  # noqa: F401
from experiments.reproduce.provenance import (  # noqa: F401
    PAGES, ROOT, git_commit, machine, started_at_commit, usable_cores, utc_now)
from experiments.reproduce.rows import Row, Table
from lvf_jax.train.reporting import MetricWriter
RESULT = "result.json"
BASE_SEED = 5544


def row_config(row: Row, *, seed: int = 0, steps: Optional[int] = None, smoke: bool = False):
  """The config of ``row``: its preset, its overrides, the seed and the step budget.

  ``smoke=True`` keeps the model and optimiser but runs ``steps`` (default 2) steps on tiny
  data (:func:`shrink_for_smoke`).
  """
  if row.config is None:
    raise ValueError(f"row {row.id!r} has no config: {row.blocker}")
  c = preset_config(row)
  c.train.seed = BASE_SEED + int(seed)
  budget = steps or row.run_steps or row.steps
  if budget:
    c.train.steps = int(budget)
    for key in ("eval_every", "checkpoint_every", "log_every"):
      c.train[key] = max(1, min(int(c.train[key]), int(budget)))
  c.train.progress_bar = False
  c.train.tensorboard = False
  c.train.allow_resume_changes = True  # a row may be resumed with a longer budget
  if smoke:
    shrink_for_smoke(c, steps=steps or 2)
  return c


SMOKE_DATA = {"max_train_examples": 8, "max_eval_examples": 4, "max_train_tokens": 400,
              "max_eval_tokens": 200, "max_len": 24}


def shrink_data(c) -> None:
  """Caps ``c``'s data (training and evaluation) for a check; model and optimiser unchanged."""
  c.train.eval_size = min(int(c.train.eval_size), 8)
  c.train.eval_batch_size = min(int(c.train.eval_batch_size), 8)
  options = c.task.options
  for key, value in SMOKE_DATA.items():
    if key in options:
      options[key] = value
  if "max_train_examples" in options:
    c.train.batch_size = min(int(c.train.batch_size), SMOKE_DATA["max_train_examples"] // 2)
  if "bptt" in options:
    options.bptt = min(int(options.bptt), 16)
    c.train.batch_size = min(int(c.train.batch_size), 4)
    c.train.eval_batch_size = min(int(c.train.eval_batch_size), 4)


def shrink_for_smoke(c, *, steps: int = 2) -> None:
  """Makes ``c`` a smoke run: ``steps`` steps on :func:`shrink_data`'s data, no plot."""
  c.train.steps = steps
  for key in ("eval_every", "checkpoint_every", "log_every"):
    c.train[key] = steps
  c.train.plot = False
  shrink_data(c)


def command(table: Table, row: Row, *, steps: Optional[int] = None,
            seeds: Optional[int] = None) -> str:
  """The shell command that runs ``row`` (its full budget unless ``steps``); for a row
  that reads another's runs (``Row.runs_of``), the command of that row. A row blocked by
  its budget (a GPU row) runs with ``--include-blocked``."""
  table, row = rows_lib.source(table, row)
  parts = ["python", "-m", "experiments.reproduce", table.id, "--rows", row.id]
  if row.budget_blocked:
    parts.append("--include-blocked")
  if steps:
    parts += ["--steps", str(steps)]
  if seeds and seeds != row.seeds:
    parts += ["--seeds", str(seeds)]
  return " ".join(shlex.quote(p) for p in parts)


def _records(workdir: str) -> list[dict]:
  return MetricWriter.read(os.path.join(workdir, "metrics.jsonl"))


def metrics_of_run(workdir: str) -> dict[str, float]:
  """Every metric of ``rows.METRICS`` that the run in ``workdir`` has."""
  with open(os.path.join(workdir, "summary.json")) as f:
    summary = json.load(f)
  records = _records(workdir)
  test = summary.get("test_at_best_validation") or {}
  out: dict[str, float] = {}
  if "loss" in test:
    out["test_loss"] = test["loss"]
    out["test_bpc"] = test["loss"] / math.log(2.0)
    out["test_ppl"] = math.exp(min(test["loss"], 700.0))
  if "accuracy" in test:
    out["test_accuracy"] = 100.0 * test["accuracy"]
  if "nll_per_sequence" in test:
    out["test_nll_per_sequence"] = test["nll_per_sequence"]
  val = [r["loss"] for r in records if r["split"] == "validation"]
  if val:
    out["val_loss"] = min(val)
  train = [r["loss"] for r in records if r["split"] == "train"]
  if train:
    out["min_train_loss"] = min(train)
  return out


def last_of_run(workdir: str) -> Optional[dict]:
  """The step and the validation metrics (``val_loss``, ``val_accuracy``, ...) of the last
  validation the run in ``workdir`` logged; None without one."""
  val = [r for r in _records(workdir) if r["split"] == "validation"]
  if not val:
    return None
  return {"step": val[-1]["step"], "split": "validation",
          "metrics": {f"val_{k}": v for k, v in val[-1].items() if k not in ("step", "split")}}


def run_curve(row: Row, workdir: str) -> dict:
  """The learning curve the row's page draws (:func:`curve_split`), thinned for the
  record."""
  split = curve_split(row)
  return {"split": split, "points": archive_lib.thin_curve(_run_curve(workdir, split))}


def _write_json(path: str, value: dict) -> None:
  """Writes ``path`` atomically (a crash leaves the old file)."""
  with open(path + ".tmp", "w") as f:
    json.dump(value, f, indent=2)
  os.replace(path + ".tmp", path)


def write_result(run_dir: str, result: dict) -> None:
  """Writes ``result.json`` of ``run_dir`` atomically (a crash leaves the old one)."""
  _write_json(os.path.join(run_dir, RESULT), result)


def row_dir(table: Table, row: Row, workdir: str, seed: Optional[int] = None) -> str:
  """``<workdir>/<table>/<row>``, the directory of ``row``'s seeds (``seed``: that seed's
  run directory); for a row with ``runs_of``, the directory of the row it names."""
  table, row = rows_lib.source(table, row)
  base = os.path.join(workdir, table.id, row.id)
  return base if seed is None else os.path.join(base, f"seed{seed}")


def compute_row(table: Table, row: Row, workdir: str, log=print) -> dict:
  """Computes an analytic ``row`` (:mod:`experiments.reproduce.analytic`) and returns its
  result (also in ``result.json``); its ``steps`` are 0."""
  from experiments.reproduce import analytic  # pylint: disable=g-import-not-at-top
  commit = started_at_commit()
  run_dir = row_dir(table, row, workdir, 0)
  os.makedirs(run_dir, exist_ok=True)
  t0 = time.time()
  values = getattr(analytic, row.analytic)(**row.analytic_args)
  result = {
      "table": table.id, "row": row.id, "seed": 0, "analytic": row.analytic,
      "arguments": row.analytic_args, "steps": 0, "paper_steps": None, "parameters": None,
      "metrics": values, "diverged_at": None, "wall_seconds": round(time.time() - t0, 1),
      "machine": machine(), "commit": commit,
      "date": utc_now(),
      "command": command(table, row), "smoke": False,
  }
  write_result(run_dir, result)
  log(f"reproduce: {table.id}/{row.id}: {values}")
  return result


def wall_covers_run(resumed_from: Optional[int], previous: Optional[dict]) -> bool:
  """Whether a result's ``wall_seconds`` covers every part of its run.

  A run that resumed from step ``resumed_from`` adds its time to the ``previous`` result's;
  that sum misses a part when the previous result ends before ``resumed_from`` (a part
  killed before it wrote a result trained the steps between) or misses one itself."""
  if not resumed_from:
    return True
  return (previous is not None and int(previous["steps"]) == int(resumed_from)
          and bool(previous.get("wall_complete", True)))


def run_row(table: Table, row: Row, workdir: str, *, seed: int = 0,
            steps: Optional[int] = None, smoke: bool = False, time_limit: float = 0.0,
            log=print) -> dict:
  """Trains one seed of ``row`` (resuming) and returns its result (also in ``result.json``);
  an analytic row is computed instead (:func:`compute_row`).

  ``time_limit`` (seconds, 0: none) stops the training at its next log step after that
  long (``config.train.time_limit``): the result then counts the steps reached, and running
  the row again resumes it; so does a stop by SIGTERM or SIGINT, whose result is written
  before :class:`lvf_jax.train.StoppedBySignal` is raised again. A row with ``runs_of``
  runs the row it names (in that row's directory, with that row's identity in the
  result)."""
  table, row = rows_lib.source(table, row)
  if row.analytic:
    return compute_row(table, row, workdir, log=log)
  commit = started_at_commit()
  from lvf_jax import train  # pylint: disable=g-import-not-at-top
  c = row_config(row, seed=seed, steps=steps, smoke=smoke)
  c.train.time_limit = float(time_limit)
  run_dir = row_dir(table, row, workdir, seed)
  done = read_result(run_dir)
  if done is not None and done["steps"] == int(c.train.steps):
    log(f"reproduce: {table.id}/{row.id} seed {seed}: done ({done['steps']} steps), skipped")
    return with_diagnostics(row, run_dir, done, smoke=smoke)
  os.makedirs(run_dir, exist_ok=True)
  with _run_lock(run_dir) as holder:
    if holder is not None:
      log(f"reproduce: {table.id}/{row.id} seed {seed}: being run by process {holder}, "
          "skipped")
      return {}
    log(f"reproduce: {table.id}/{row.id} seed {seed}: {c.train.steps} steps in {run_dir}")
    t0 = time.time()
    stopped = None
    try:
      summary = train.train_and_evaluate(c, run_dir)
    except train.NonFiniteLossError as e:
      log(f"reproduce: {table.id}/{row.id} seed {seed}: {e}")
      summary = {"steps": int(c.train.steps), "parameters": None,
                 "best_validation_step": None, "baseline_loss": None, "diverged_at": e.step}
    except train.StoppedBySignal as e:  # a partial result, as at a time limit; then stop
      stopped, summary = e, e.summary
  elapsed = time.time() - t0
  previous = 0.0 if done is None else float(done.get("wall_seconds", 0.0))
  diverged = summary.get("diverged_at")
  result = {
      "table": table.id, "row": row.id, "seed": seed, "train_seed": int(c.train.seed),
      "config": row.config, "overrides": row.overrides,
      "steps": int(summary["steps"]), "paper_steps": row.steps,
      "budget_steps": int(c.train.steps),
      "parameters": summary["parameters"],
      "effective_parameters": summary.get("effective_parameters"),
      "metrics": {} if diverged else metrics_of_run(run_dir), "diverged_at": diverged,
      "last": None if diverged else last_of_run(run_dir),
      "curve": run_curve(row, run_dir),
      "best_validation_step": summary["best_validation_step"],
      "baseline_loss": summary["baseline_loss"],
      "wall_seconds": round(previous + elapsed, 1) if summary.get("resumed_from") else
                      round(elapsed, 1),
      "wall_complete": wall_covers_run(summary.get("resumed_from"), done),
      "resumed_from": summary.get("resumed_from"),
      "machine": machine(), "commit": commit,
      "date": utc_now(),
      "command": command(table, row, steps=steps if steps and steps != row.steps else None),
      "smoke": smoke,
  }
  write_result(run_dir, result)
  if stopped is not None:  # measured when the run resumes
    raise stopped
  return with_diagnostics(row, run_dir, result, smoke=smoke)


def with_diagnostics(row: Row, run_dir: str, result: dict, *, smoke: bool = False) -> dict:
  """``result`` with the measurements the row names (``Row.diagnostics``,
  :mod:`experiments.reproduce.diagnostics`) that it lacks, taken on the run in ``run_dir``
  and written to its ``result.json``."""
  have = result.get("diagnostics") or {}
  missing = {k: v for k, v in row.diagnostics.items() if have.get(k) is None}
  if not missing:
    return result
  from experiments.reproduce import diagnostics  # pylint: disable=g-import-not-at-top
  result = {**result, "diagnostics": {**have, **diagnostics.measure(missing, run_dir,
                                                                    smoke=smoke)}}
  write_result(run_dir, result)
  return result


def reevaluate_row(table: Table, row: Row, workdir: str, log=print) -> list[dict]:
  """Adds the test metrics a finished seed of ``row`` lacks by re-measuring its best
  validation variables with the current code (:func:`lvf_jax.zoo.evaluate_run`).

  The recorded figures are kept: a seed whose re-measured test loss differs from its
  recorded one (relative 1e-4: the code or data changed) is left as it is and reported. The
  added keys go into the run's ``summary.json`` (``test_at_best_validation``) and
  ``result.json``, both with ``reevaluated`` (commit, date, keys). Returns the updated
  results.
  """
  updated = []
  for result in results_of_row(table, row, workdir):
    run_dir = row_dir(table, row, workdir, result["seed"])
    where = f"reproduce: {table.id}/{row.id} seed {result['seed']}"
    if row.analytic or result.get("diverged_at"):
      log(f"{where}: not re-evaluated (analytic or diverged)")
      continue
    with _run_lock(run_dir) as holder:
      if holder is not None:
        log(f"{where}: being run by process {holder}, not re-evaluated")
        continue
      updated_result = _reevaluate_seed(run_dir, result, where, log)
    if updated_result is not None:
      updated.append(updated_result)
  return updated


def _reevaluate_seed(run_dir: str, result: dict, where: str, log) -> Optional[dict]:
  """:func:`reevaluate_row` for one seed whose lock this process holds; ``None`` when the
  re-measured test loss differs from the recorded one."""
  from lvf_jax import zoo  # pylint: disable=g-import-not-at-top
  with open(os.path.join(run_dir, "summary.json")) as f:
    summary = json.load(f)
  test = summary.get("test_at_best_validation") or {}
  metrics = zoo.evaluate_run(run_dir, "test")
  if not math.isclose(metrics["loss"], test.get("loss", math.nan), rel_tol=1e-4):
    log(f"{where}: re-measured test loss {metrics['loss']:.6g} differs from the recorded "
        f"{test.get('loss')}: not updated")
    return None
  added = sorted(set(metrics) - set(test))
  stamp = {"commit": started_at_commit(), "keys": added,
           "date": utc_now()}
  summary["test_at_best_validation"] = {**test, **{k: metrics[k] for k in added}}
  summary["reevaluated"] = stamp
  _write_json(os.path.join(run_dir, "summary.json"), summary)
  result = {**result, "metrics": metrics_of_run(run_dir), "reevaluated": stamp}
  write_result(run_dir, result)
  log(f"{where}: added {added or 'nothing'}")
  return result


LOCK = "running.pid"


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def _lock(run_dir: str) -> Optional[int]:
  """Takes ``run_dir``'s lock for this process; returns the live holder's pid if another
  process has it. A lock left by a dead process is taken over (its run resumes)."""
  path = os.path.join(run_dir, LOCK)
  for _ in range(2):
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
      try:
        with open(path) as f:
          pid = int(f.read().strip() or 0)
      except (OSError, ValueError):
        pid = 0
      if pid and pid != os.getpid() and _alive(pid):
        return pid
      os.remove(path)
      continue
    with os.fdopen(fd, "w") as f:
      f.write(str(os.getpid()))
    return None
  return None


@contextlib.contextmanager
def _run_lock(run_dir: str) -> Iterator[Optional[int]]:
  """:func:`_lock` for the body of the ``with``: yields the live holder's pid (nothing
  taken) or None (taken here, and released when the body ends, however it ends)."""
  holder = _lock(run_dir)
  try:
    yield holder
  finally:
    if holder is None:
      os.remove(os.path.join(run_dir, LOCK))


def read_result(run_dir: str) -> Optional[dict]:
  path = os.path.join(run_dir, RESULT)
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


def results_of_row(table: Table, row: Row, workdir: str) -> list[dict]:
  """The finished seeds of ``row`` under ``workdir`` (:func:`row_dir`), in seed order."""
  base = row_dir(table, row, workdir)
  if not os.path.isdir(base):
    return []
  out = []
  for name in sorted(os.listdir(base)):
    if name.startswith("seed"):
      r = read_result(os.path.join(base, name))
      if r is not None:
        out.append(r)
  return out


def curve_split(row: Row) -> str:
  """The split of a row's learning curve: training for a row judged on its minimum training
  loss, else validation."""
  return "train" if "min_train_loss" in row.paper else "validation"


def _run_curve(run_dir: str, split: str) -> list:
  """``[[step, loss], ...]`` of ``split`` in the run's metrics (empty without them)."""
  if not os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
    return []
  return [[r["step"], r["loss"]] for r in _records(run_dir) if r["split"] == split]


def budget_of(row: Row) -> Optional[int]:
  """The steps of the row's full budget (``Row.steps``: the paper's, or the preset's where
  the paper gives none); None for a computed row. Never the run's own."""
  return None if row.analytic else int(row.steps)


def explaining_rows(row: Row, pages_dir: Optional[str] = None) -> tuple:
  """The rows of ``row.explained_by`` whose records in the committed archive of
  ``pages_dir`` (default ``docs/reproduction``) show their setting landing near the paper:
  finite, at the named row's full budget (``paper_steps``; a partial run has not shown where
  the setting ends), and within :data:`~experiments.reproduce.verdict.FACTOR_FLAG` of each
  of ``row``'s printed losses that they report (their mean over seeds)."""
  pages_dir = pages_dir or PAGES
  named = [name.split("/") for name in row.explained_by]
  stores = {table_id: archive_lib.load(archive_lib.path_for(pages_dir, table_id))
            for table_id in {table_id for table_id, _ in named}}  # each archive read once
  return tuple(name for name, (table_id, row_id) in zip(row.explained_by, named)
               if _explains(row, row_id, stores[table_id]))


def explanation_recorded(row: Row, pages_dir: Optional[str] = None) -> bool:
  """Whether one of the rows of ``row.explained_by`` explains it (:func:`explaining_rows`)."""
  return bool(explaining_rows(row, pages_dir))


def _explains(row: Row, row_id: str, store: dict) -> bool:
  """Whether the records of ``row_id`` in the archive ``store`` explain ``row``
  (:func:`explaining_rows`)."""
  seeds = store.get("rows", {}).get(row_id, {}).get("seeds", {}).values()
  finite = [r for r in seeds if not r.get("smoke") and not r.get("diverged_at")
            and r.get("paper_steps") and int(r.get("steps") or 0) >= int(r["paper_steps"])]
  losses = [m for m in row.paper if verdict_lib.LOWER_IS_BETTER.get(m)]
  values = {m: [r["metrics"][m] for r in finite if m in r.get("metrics", {})] for m in losses}
  reported = {m: v for m, v in values.items() if v}
  return bool(reported) and not any(
      verdict_lib.far_better(m, v, row.paper[m]) for m, v in reported.items())


def complete(row: Row, records: list) -> bool:
  """Whether ``records`` cover ``row``'s full budget: every seed it plans, each at its full
  steps (a computed row: one record)."""
  records = [r for r in records if not r.get("smoke")]
  if row.analytic:
    return bool(records)
  return not verdict_lib.short_of_budget(records, budget_of(row), row.seeds)


#: The metrics by which a row without paper values (a stand-in, or a study's row) is held
#: against its task's floor.
STAND_IN_JUDGED = ("val_loss", "test_loss")


def row_floors(row: Row, records: list, stored_floors: Optional[dict] = None) -> dict:
  """``{metric: (value, what)}``: the floors of the metrics ``row`` is judged by, its paper
  values' or, without them, :data:`STAND_IN_JUDGED`
  (:func:`experiments.reproduce.floors.of_row`)."""
  if not row.paper and row.config is not None:
    row = dataclasses.replace(row, paper=dict.fromkeys(STAND_IN_JUDGED, math.nan))
  return floors_lib.of_row(row, records, stored_floors)


def judge_row(row: Row, records: list, stored_floors: Optional[dict] = None
              ) -> verdict_lib.Verdict:
  """The verdict of ``row`` from its per-seed ``records``, with its task's floors and its
  budget (:func:`experiments.reproduce.verdict.judge`). A row without paper values has
  none, unless its records stop short of its budget (``partial``) or a metric of
  :data:`STAND_IN_JUDGED` is at its floor (``at floor``)."""
  records = [r for r in records if not r.get("smoke")]
  row_floor = row_floors(row, records, stored_floors)
  if not row.paper:
    return _stand_in_verdict(records, row_floor, complete(row, records))
  return verdict_lib.judge(row.paper, records, floors=row_floor, budget=budget_of(row),
                           seeds=row.seeds, task=task_name(row),
                           explained=explanation_recorded(row))


def _stand_in_verdict(records: list, row_floor: dict, full: bool) -> verdict_lib.Verdict:
  """``at floor`` when the mean over the finite seeds of a judged metric is within the
  tolerance of its floor (:func:`experiments.reproduce.verdict.at_floor`), else none; short of
  the ``full`` budget, ``partial`` (``at floor so far`` beside it where it is at floor)."""
  values = {m: list(verdict_lib.finite_values(records, m)) for m in row_floor}
  floored = verdict_lib.floored(values, row_floor) is not None
  if records and not full:
    return verdict_lib.Verdict(verdict_lib.PARTIAL,
                               so_far=verdict_lib.AT_FLOOR_SO_FAR if floored else "")
  return verdict_lib.Verdict(verdict_lib.AT_FLOOR if floored else "")


def release_row(table: Table, row: Row, workdir: str) -> str:
  """Releases ``row`` into ``lvf_jax.zoo`` when its runs meet the paper; says what it did.

  The released seed is the one with the best validation loss; its card's check is the
  whole test split of the config (the fixed evaluation set of a synthetic task).
  """
  from lvf_jax import zoo  # pylint: disable=g-import-not-at-top
  if row.analytic:
    return "not released (a computed row has no weights)"
  if row.runs_of:
    return f"not released (the runs of {row.runs_of}: release that row)"
  results = [r for r in results_of_row(table, row, workdir) if not r.get("smoke")]
  status = judge_row(row, results)
  if status.category not in (verdict_lib.MEETS, verdict_lib.BEATS):
    return f"not released ({status.category or 'no paper value'})"
  best = min(results, key=lambda r: r["metrics"].get("val_loss", math.inf))
  run_dir = row_dir(table, row, workdir, best["seed"])
  from lvf_jax.tasks import TASKS  # pylint: disable=g-import-not-at-top
  task = row_config(row).task.name
  data = ("synthetic (drawn from the seed)" if task in TASKS else
          f"{task} (read from $LVF_JAX_DATA_DIR)")
  out = zoo.release(
      f"{table.id}-{row.id}", run_dir,
      info=dict(model=row.model, task=row.task, paper=row.paper, paper_citation=table.citation,
                table=table.id, table_number=table.number, row=row.id, config=row.config,
                data=data, result=best),
      check_overrides={}, check_split="test")
  return f"released seed {best['seed']} to {out}"
