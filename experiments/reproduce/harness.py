"""Runs rows of the papers' tables and writes their reproduction pages.

A row runs as ``train_and_evaluate`` of its config (``configs/<file>.py:<preset>`` plus the
row's overrides) in ``<workdir>/<table>/<row>/seed<k>``; the training loop resumes from the
latest checkpoint, and a finished seed leaves ``result.json`` there, so running a table
again only runs what is missing. :func:`write_table` merges the results into the
committed archive beside the pages (:mod:`experiments.reproduce.archive`) and renders
``docs/reproduction/<paper>-t<N>.md`` and a figure of the validation curves from it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import textwrap
import time
from typing import Iterable, Iterator, Optional

import numpy as np

from experiments.reproduce import archive as archive_lib
from experiments.reproduce import rows as rows_lib
from experiments.reproduce.rows import Row, Table
from lvf_jax.train.config import set_field
from lvf_jax.train.reporting import MetricWriter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULT = "result.json"
BASE_SEED = 5544


def load_config(spec: str):
  """The config of ``'<file>.py:<preset>'`` under ``configs/``."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  if ":" not in spec:
    raise ValueError(f"config spec must be '<file>.py:<preset>'; got {spec!r}.")
  file, preset = spec.split(":", 1)
  path = os.path.join(ROOT, "configs", file)
  if not os.path.exists(path):
    raise ValueError(f"config spec {spec!r}: no file {path}.")
  module = importlib.util.module_from_spec(
      importlib.util.spec_from_file_location(f"configs_{file[:-3]}", path))
  module.__spec__.loader.exec_module(module)
  return module.get_config(preset)


def row_config(row: Row, *, seed: int = 0, steps: Optional[int] = None, smoke: bool = False):
  """The config of ``row``: its preset, its overrides, the seed and the step budget.

  ``smoke=True`` keeps the model and optimiser but runs ``steps`` (default 2) steps on tiny
  data (:func:`shrink_for_smoke`).
  """
  if row.config is None:
    raise ValueError(f"row {row.id!r} has no config: {row.blocker}")
  c = load_config(row.config)
  for key, value in row.overrides.items():
    set_field(c, key, value)
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


_STARTED_AT_COMMIT: list = []


def started_at_commit() -> str:
  """:func:`git_commit` when this process first asked: the code a long-running process
  trains with is the code it imported, not the work tree's when a run ends."""
  if not _STARTED_AT_COMMIT:
    _STARTED_AT_COMMIT.append(git_commit())
  return _STARTED_AT_COMMIT[0]


def git_commit() -> str:
  """``HEAD``'s short hash, with ``+dirty`` when the work tree has uncommitted changes;
  ``$LVF_JAX_COMMIT`` where set (a copy of the tree without its git history, e.g. on a
  remote machine)."""
  if os.environ.get("LVF_JAX_COMMIT"):
    return os.environ["LVF_JAX_COMMIT"]
  try:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return "unknown"
  return head + ("+dirty" if dirty else "")


def usable_cores() -> int:
  """The number of CPU cores this process may run on: its affinity mask where the platform
  has one (a run pinned with ``taskset -c 0`` gets 1), else the machine's core count."""
  try:
    return len(os.sched_getaffinity(0))
  except (AttributeError, OSError):
    return os.cpu_count() or 1


def machine() -> str:
  """The CPU model and the cores the run may use (or the JAX accelerator), for the tables."""
  import jax  # pylint: disable=g-import-not-at-top
  dev = jax.devices()[0]
  if dev.platform != "cpu":
    return f"{dev.device_kind} ({dev.platform})"
  model = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          model = line.split(":", 1)[1].strip()
          break
  except OSError:
    pass
  cores = usable_cores()
  return f"{model}, {cores} core{'s' if cores != 1 else ''}"


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
      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
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
    return done
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
      "best_validation_step": summary["best_validation_step"],
      "baseline_loss": summary["baseline_loss"],
      "wall_seconds": round(previous + elapsed, 1) if summary.get("resumed_from") else
                      round(elapsed, 1),
      "wall_complete": wall_covers_run(summary.get("resumed_from"), done),
      "resumed_from": summary.get("resumed_from"),
      "machine": machine(), "commit": commit,
      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
      "command": command(table, row, steps=steps if steps and steps != row.steps else None),
      "smoke": smoke,
  }
  write_result(run_dir, result)
  if stopped is not None:
    raise stopped
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
           "date": datetime.datetime.now(datetime.timezone.utc).strftime(
               "%Y-%m-%d %H:%M UTC")}
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


def _fmt(value: float, metric: str) -> str:
  if metric == "test_accuracy":
    return f"{value:.1f} %"
  if value != 0 and (abs(value) < 1e-2 or abs(value) >= 1e4):
    return f"{value:.3g}"
  return f"{value:.4g}"


def summarize(values: Iterable[float], metric: str) -> str:
  """``mean ± std (n seeds)`` (the sample standard deviation), or the single value."""
  v = np.asarray(list(values), np.float64)
  if v.size == 0:
    return ""
  if v.size == 1:
    return _fmt(float(v[0]), metric)
  return f"{_fmt(float(v.mean()), metric)} ± {_fmt(float(v.std(ddof=1)), metric)} ({v.size} seeds)"


LOWER_IS_BETTER = {"test_loss": True, "test_bpc": True, "test_ppl": True, "val_loss": True,
                   "min_train_loss": True, "test_accuracy": False,
                   "test_nll_per_sequence": True}
#: Metrics shown under a row's own whenever its runs have them (not part of the verdict
#: unless the row's paper values name them).
ALSO_SHOWN = ("test_nll_per_sequence",)
#: Metrics shown for a stand-in row (a config but no paper value: another dataset run with
#: a table's models and settings).
STAND_IN_SHOWN = ("val_loss", "test_loss")
#: Computed quantities: ours meets the paper when it rounds to the paper's printed value
#: (three significant digits).
EXACT = {"fmc_total": 3}


def verdict(paper: dict, results: list[dict]) -> str:
  """``'meets'`` when the mean of every paper metric is at least as good, else ``'misses'``;
  ``''`` without results or without a paper value (a stand-in row)."""
  if not results or not paper:
    return ""
  if any(r.get("diverged_at") for r in results):
    return "misses"
  ok = True
  for metric, value in paper.items():
    ours = [r["metrics"].get(metric) for r in results]
    if any(o is None for o in ours):
      return ""
    mean = float(np.mean(ours))
    if metric in EXACT:
      ok &= f"{mean:.{EXACT[metric]}g}" == f"{value:.{EXACT[metric]}g}"
    else:
      ok &= mean <= value if LOWER_IS_BETTER[metric] else mean >= value
  return "meets" if ok else "misses"


def _params(results: list[dict]) -> str:
  """The run's parameter count, with the papers' effective count where it differs."""
  counts = [r for r in results if r.get("parameters")]
  if not counts:
    return ""
  raw, eff = counts[0]["parameters"], counts[0].get("effective_parameters")
  return f"{raw} ({eff} effective)" if eff and eff != raw else str(raw)


def _steps(row: Row, results: list[dict]) -> str:
  if row.analytic:
    return "computed"
  if not results:
    return str(row.steps or "")
  ran = results[0]["steps"]
  budget = row.steps or results[0].get("budget_steps")  # the paper's, else the config's
  if budget and ran < budget:
    return f"{ran} of {budget} ({100.0 * ran / budget:.0f} %)"
  return str(ran)


def _curve_split(row: Row) -> str:
  return "train" if "min_train_loss" in row.paper else "validation"


def _run_curve(run_dir: str, split: str) -> list:
  """``[[step, loss], ...]`` of ``split`` in the run's metrics (empty without them)."""
  if not os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
    return []
  return [[r["step"], r["loss"]] for r in _records(run_dir) if r["split"] == split]


def archive_results(table: Table, workdir: str, archive: dict) -> dict:
  """Merges the finished (not smoke) results of ``table`` under ``workdir`` into
  ``archive`` (``{"rows": {row: {"seeds": {seed: result}}}}``), each with its thinned
  learning curve; a result replaces an archived one only where it
  :func:`~experiments.reproduce.archive.supersedes` it. Returns ``archive``."""
  archive.setdefault("table", table.id)
  entries = archive.setdefault("rows", {})
  for row in table.rows:
    for r in results_of_row(table, row, workdir):
      if r.get("smoke"):
        continue
      seeds = entries.setdefault(row.id, {}).setdefault("seeds", {})
      old = seeds.get(str(r["seed"]))
      if not archive_lib.supersedes(r, old):
        continue
      split = _curve_split(row)
      points = _run_curve(row_dir(table, row, workdir, r["seed"]), split)
      seeds[str(r["seed"])] = {**r, "curve": {"split": split,
                                              "points": archive_lib.thin_curve(points)}}
  return archive


def row_results(table: Table, row: Row, workdir: str, archive: Optional[dict] = None
                ) -> list[dict]:
  """The results of ``row`` by seed: the archived ones, replaced by those under ``workdir``
  that supersede them."""
  by_seed = {}
  if archive:
    for seed, r in archive.get("rows", {}).get(row.id, {}).get("seeds", {}).items():
      by_seed[int(seed)] = r
  for r in results_of_row(table, row, workdir):
    if archive_lib.supersedes(r, by_seed.get(int(r["seed"]))):
      by_seed[int(r["seed"])] = r
  return [by_seed[k] for k in sorted(by_seed)]


def _printed(row: Row, archive: Optional[dict]) -> Optional[dict]:
  """The row's figures as printed on its page before its runs were archived, if any."""
  return (archive or {}).get("rows", {}).get(row.id, {}).get("page")


def table_markdown(table: Table, workdir: str, figure: Optional[str] = None,
                   archive: Optional[dict] = None, undrawn: Iterable[str] = ()) -> str:
  """The reproduction page of ``table`` from the results under ``workdir`` and in
  ``archive``; ``undrawn`` names rows with results whose curves the figure lacks."""
  lines = [f"# {table.citation}, Table {table.number}", "", table.caption, "",
           "Generated by `python -m experiments.reproduce "
           f"{table.id} --report-only` from the runs' results (their `result.json` files, "
           f"archived in `results/{table.id}.json`). 'ours' is the "
           "test metric at the best validation step unless the metric says otherwise; "
           "mean ± sample standard deviation over seeds.", "",
           "| task | model | metric | paper | ours | verdict | params (paper / ours) | steps | "
           "wall time | note |",
           "|---|---|---|---|---|---|---|---|---|---|"]
  runs = []
  for row in table.rows:
    results = row_results(table, row, workdir, archive)
    printed = None if results else _printed(row, archive)
    if printed:
      lines += _printed_lines(row, printed)
      runs += printed["runs"]
      continue
    status = verdict(row.paper, results)
    note = row.note
    if row.blocker and not results:
      note = f"**not run: {row.blocker}**" + (f" {note}" if note else "")
    elif not results:
      note = "**not run yet**" + (f" {note}" if note else "")
    diverged = [r for r in results if r.get("diverged_at")]
    if diverged:
      steps_at = ", ".join(str(r["diverged_at"]) for r in diverged)
      note = (f"**non-finite loss in {len(diverged)} of {len(results)} seeds (at step "
              f"{steps_at})**" + (f" {note}" if note else ""))
    wall = f"{sum(r['wall_seconds'] for r in results) / len(results) / 60:.1f} min" \
        if results else ""
    if any(r.get("resumed_from") and not r.get("wall_complete", False) for r in results):
      wall += " (not counting a part stopped before it recorded a result)"
    shown = list(row.paper.items()) or ([(m, None) for m in STAND_IN_SHOWN] if row.config
                                        else [("", None)])
    if set(row.paper) & {"min_train_loss", "val_loss"} and "test_loss" not in row.paper:
      shown.append(("test_loss", None))  # the paper's minimum loss and our test figure
    shown += [(m, None) for m in ALSO_SHOWN
              if m not in row.paper and any(m in r["metrics"] for r in results)]
    for i, (metric, value) in enumerate(shown):
      ours = summarize([r["metrics"][metric] for r in results if metric in r["metrics"]],
                       metric)
      lines.append(_row_line(row, i == 0, metric, value, ours, status, _params(results),
                             _steps(row, results), wall, note))
    for r in results:
      commit = r["commit"] + (f" (re-evaluated at {r['reevaluated']['commit']})"
                              if r.get("reevaluated") else "")
      runs.append(f"| {row.id} | {r['seed']} | `{r['command']}` | {commit} | "
                  f"{r['machine']} | {r['date']} |")
  if figure:
    lines += ["", f"![validation curves]({os.path.basename(figure)})"]
    undrawn = list(undrawn)
    if undrawn:
      lines += ["", "Not drawn above (run before their curves were archived): "
                + ", ".join(f"`{r}`" for r in undrawn) + "."]
      earlier = os.path.join(os.path.dirname(figure), f"{table.id}-printed.png")
      if os.path.exists(earlier):
        lines += ["", f"![validation curves of the earlier runs]({os.path.basename(earlier)})"]
  if runs:
    lines += ["", "## Runs", "", "| row | seed | command | commit | machine | date |",
              "|---|---|---|---|---|---|", *runs]
  lines += ["", "## Commands of every row (full budget)", ""]
  lines += [f"- `{row.id}`: `{command(table, row, steps=row.steps if row.run_steps else None)}`"
            + (f" (config `{row.config}`)" if row.config else "") for row in table.rows]
  return "\n".join(lines) + "\n"


def _row_line(row: Row, first: bool, metric: str, value: Optional[float], ours: str,
              status: str, params: str, steps: str, wall: str, note: str) -> str:
  return "| " + " | ".join([
      row.task if first else "", row.model if first else "", metric or "-",
      "-" if value is None else _fmt(value, metric), ours, status if first else "",
      f"{row.paper_params or '?'} / {params or '-'}" if first else "",
      steps if first else "", wall if first else "", note if first else ""]) + " |"


def _printed_lines(row: Row, printed: dict) -> list[str]:
  """The table lines of a row whose figures are known only as printed (``"page"``)."""
  note = row.note
  if printed.get("flag"):
    note = printed["flag"] + (f" {note}" if note else "")
  return [_row_line(row, i == 0, metric, row.paper.get(metric), ours, printed["verdict"],
                    printed["params"], printed["steps"], printed["wall"], note)
          for i, (metric, ours) in enumerate(printed["metrics"])]


def _curves(table: Table, workdir: str, archive: Optional[dict] = None) -> list:
  """``(label, points, split)`` of the first seed of every row that has a learning curve:
  the run's own under ``workdir``, else the archived one. Rows of the table that read the
  same runs (``Row.runs_of``) give one curve, labelled by the row that trains when it is in
  the table."""
  curves, drawn = [], set()
  for row in table.rows:
    source_table, source = rows_lib.source(table, row)
    if (source_table.id, source.id) in drawn:
      continue
    results = row_results(table, row, workdir, archive)
    if not results:
      continue
    split = _curve_split(row)
    pts = (_run_curve(row_dir(table, row, workdir, results[0]["seed"]), split)
           or (results[0].get("curve") or {}).get("points", []))
    if pts:
      drawn.add((source_table.id, source.id))
      named = source if source_table.id == table.id else row
      curves.append((f"{named.model} ({named.task})", np.asarray(pts, np.float64), split))
  return curves


def plot_table(table: Table, curves: list, path: str) -> Optional[str]:
  """The learning ``curves`` (:func:`_curves`) of ``table`` in one figure at ``path``; None
  if there are none."""
  from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
  if not curves:
    return None
  fig = Figure(figsize=(7.5, 4.5))
  ax = fig.subplots()
  for label, pts, split in curves:
    ax.plot(pts[:, 0], pts[:, 1], label=f"{label}, {split}")
  positive = all(float(np.min(p[:, 1])) > 0 for _, p, _ in curves)
  if positive:
    ax.set_yscale("log")
  ax.set_xlabel("optimiser step")
  ax.set_ylabel("loss")
  ax.set_title(textwrap.fill(f"{table.citation}, Table {table.number}", 85), fontsize=9)
  ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  return path


def write_table(table: Table, workdir: str, out_dir: str) -> str:
  """Merges the results under ``workdir`` into the archive
  ``<out_dir>/results/<table.id>.json``, writes ``<out_dir>/<table.id>.md`` (and its
  ``.png``) from it and returns the Markdown path.

  Where no run has a stored curve but rows are known as printed, an existing figure (drawn
  from those runs) is kept."""
  os.makedirs(out_dir, exist_ok=True)
  store = archive_lib.path_for(out_dir, table.id)
  archive = archive_results(table, workdir, archive_lib.load(store))
  archive_lib.save(store, archive)
  png = os.path.join(out_dir, f"{table.id}.png")
  earlier = os.path.join(out_dir, f"{table.id}-printed.png")
  printed = [r.id for r in table.rows
             if not row_results(table, r, workdir, archive) and _printed(r, archive)]
  curves = _curves(table, workdir, archive)
  if not curves and printed and os.path.exists(png):
    figure, printed = png, []  # drawn from the printed rows' runs: kept
  else:
    if printed and os.path.exists(png) and not os.path.exists(earlier):
      os.replace(png, earlier)  # the printed rows' curves, drawn before the archive
    figure = plot_table(table, curves, png)
  path = os.path.join(out_dir, f"{table.id}.md")
  with open(path, "w") as f:
    f.write(table_markdown(table, workdir, figure, archive, undrawn=printed))
  return path


def write_index(tables: dict, workdir: str, out_dir: str) -> str:
  """Writes ``<out_dir>/README.md``: every table with its counts of rows run, meeting the
  paper, not yet run and not runnable here (from the runs and the archives)."""
  lines = ["# Reproduction of the papers' tables", "",
           "One page per table of the four source papers. Every numeric cell of a table is a "
           "row (`experiments/reproduce/tables/`) with the config that runs it; a page shows "
           "the paper's value next to ours, or why a row cannot run here (no data, a model "
           "lvf_jax does not implement, or the budget of a GPU row, which "
           "`--include-blocked` runs anyway). Regenerate with "
           "`python -m experiments.reproduce all --report-only`; run a table with "
           "`python -m experiments.reproduce <table>` (resumable). The results behind the "
           "pages are archived in `results/` (one JSON file per table), so the pages can be "
           "regenerated without the runs.", "",
           "| table | paper | rows | run | meet the paper | not run yet | cannot run here |",
           "|---|---|---|---|---|---|---|"]
  for t in tables.values():
    archive = archive_lib.load(archive_lib.path_for(out_dir, t.id))
    ran = meets = blocked = 0
    for r in t.rows:
      results = [x for x in row_results(t, r, workdir, archive) if not x.get("smoke")]
      printed = None if results else _printed(r, archive)
      if results or printed:
        ran += 1
        meets += (printed["verdict"] if printed else verdict(r.paper, results)) == "meets"
      elif r.blocker:
        blocked += 1
    lines.append(f"| [{t.id}]({t.id}.md) Table {t.number} | {t.citation} | {len(t.rows)} | "
                 f"{ran} | {meets} | {len(t.rows) - ran - blocked} | {blocked} |")
  os.makedirs(out_dir, exist_ok=True)
  path = os.path.join(out_dir, "README.md")
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
  return path


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
  status = verdict(row.paper, results)
  if status != "meets":
    return f"not released ({'no runs' if not results else 'does not meet the paper'})"
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
