"""The NC-GRU rows above the paper: each hypothesis for the gap, judged from the records.

NC-GRU(U_c) and NC-GRU(U_c, U_r) (Mucllari et al. 2022, arXiv:2208.06496) miss Table 1's
parenthesis losses, Table 2's denoise losses at T = 400 and Table 4's copy losses at
T = 1000 and 2000 under the harness, while the same presets meet or beat the paper's denoise
values at T = 200. The page tests one hypothesis at a time, each from the harness's archives
alone, so that every verdict can say no:

- H0, the seeds: is the paper's value within the scatter of one run against our seeds' mean?
- H1, the evaluation: could a minimum over single-batch evaluations reach the paper's value?
  (the runner's ``batch_minimum`` of the trained model, against the smallest of as many normal
  draws as the run has steps, Blom's approximation)
- H2, the initialisation: does the authors' released cell's initialisation
  (``NCGRUCell(init_scheme='released')``, the study rows ``<row>-released-init``) take the
  row to the paper?
- H3, the Neumann step: does the released code's series, which takes a plain SGD step while
  Adam moves ``A`` by another (``optim.neumann_step='sgd'``, the study rows
  ``<row>-released-step``), take the row to the paper? (Sec. 5.1 reports the Neumann series
  "significantly better" than the exact inverse it approximates.)
- H4, the logged loss: does reading each batch's loss after its own update, as the released
  denoise code logs it, take the row's minimum to the paper? (the runner's ``after_update``
  replays the run's last steps and measures the ratio of the two losses)
- H5, the data: could the released denoise data (Jing et al.'s generator: the K positions
  drawn with replacement, so a symbol can be overwritten and still be a target) lower the
  minimum? (the loss the overwritten symbols add, computed)
- H6, H2 and H3 together: does the released code's initialisation with its Neumann step (the
  study rows ``<row>-released-both``) take the row to the paper?
- H7, the released code for two kernels: do H6 and the released update of NC-GRU(U_c, U_r)'s
  two kernels (``optim.two_kernel_update='released'``, the study rows
  ``<row>-released-code``) take an NC-GRU(U_c, U_r) row to the paper?

``python -m experiments.ncgru_misses`` writes ``docs/NCGRU_MISSES.md`` from the archives.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile

import numpy as np

from experiments.batch_minima import settings_lines, write_page
from experiments.denoise_metric import normal_minimum
from experiments.reproduce import (archive, claims, diagnostics, pages, presets, provenance,
                                   rows, runner)
from experiments.reproduce import verdict as verdict_lib

PAGE = os.path.join(provenance.ROOT, "docs", "NCGRU_MISSES.md")
#: The rows studied: ``(table, row)``.
MISSES = (("ncgru-t1", "parenthesis-ncgru-uc-t100"), ("ncgru-t1", "parenthesis-ncgru-uc-t200"),
          ("ncgru-t1", "parenthesis-ncgru-uruc-t100"), ("ncgru-t1", "parenthesis-ncgru-uruc-t200"),
          ("ncgru-t2", "denoise-ncgru-uc-t400"), ("ncgru-t2", "denoise-ncgru-ucur-t400"),
          ("ncgru-t4", "copy-ncgru-uc-t1000"), ("ncgru-t4", "copy-ncgru-ucur-t1000"),
          ("ncgru-t4", "copy-ncgru-uc-t2000"), ("ncgru-t4", "copy-ncgru-ucur-t2000"))
#: The suffixes of a row's study rows: the released cell's initialisation, its Neumann step,
#: both, and (two kernels) both with the released two-kernel update.
STUDIES = ("-released-init", "-released-step", "-released-both", "-released-code")
CODE = "emucllari1/NC-GRU at b86f34e, `denoise_task/NCGRU.py`"

#: (setting, the paper, the authors' released cell, ``NCGRUCell``), read from both.
SETTINGS = (
    ("gates' kernels, one orthogonal kernel", "not given", "one kernel over [x; h], "
     "He-uniform with fan-in d + n (`gate_kernel`); biases zero", "`W_r, W_u` LeCun-normal "
     "(fan-in d), `U_r, U_u` orthogonal; biases zero"),
    ("gates' kernels, two orthogonal kernels", "not given", "`W_r, W_u` He-uniform (fan-in "
     "d), `U_u` He-uniform (fan-in n), biases N(0, 1)", "as with one; biases zero"),
    ("candidate's input kernel", "not given", "He-normal, fan-in d (`weight_UC`)",
     "LeCun-normal, fan-in d"),
    ("modReLU bias", "not given", "U(-0.1, 0.1) (`bias_C`)", "U(-0.01, 0.01)"),
    ("U_c (and U_r)", "scaled Cayley, Sec. 3", "Cayley of A with A's superdiagonal "
     "-tan(s / 2), s ~ U(0, pi / 2), times D", "the same (`orthogonal_init='cayley'`)"),
    ("Neumann series' step dA", "optimizer_A's step (eq 18, Alg. 1)", "A_lr (V^T - V), the "
     "step of plain SGD, while Adam updates A (`utils.makeW`); exact inverse every 49 steps",
     "the step Adam took; exact every `reset_every` (denoise 50, copy 20) steps"),
    ("NC-GRU(U_c, U_r)'s two updates", "Alg. 1 for each of A_c, A_r", "both A_c and A_r "
     "stepped from `grads[-1]`, the gradient of U_r; U_r's series starts from U_c's inverse",
     "each from its own gradient and inverse (the released update: "
     "`optim.two_kernel_update='released'`)"),
    ("logged loss (denoise)", "'minimum attained loss values' (Sec. 4.2)", "every step, the "
     "loss of that step's batch evaluated after its update (`loss_to_file`)", "the mean of "
     "10 batches' losses, each before its update"),
)


def load_store(table_id: str, pages_dir: str = runner.PAGES) -> dict:
  """The archive of ``table_id`` under ``pages_dir`` (``{}`` before any record)."""
  return archive.load(archive.path_for(pages_dir, table_id))


def records(store: dict, row_id: str) -> list:
  """The row's recorded seeds (smoke runs left out), from a table's archive ``store``."""
  seeds = store.get("rows", {}).get(row_id, {}).get("seeds", {})
  return [r for _, r in sorted(seeds.items()) if not r.get("smoke")]


def _metric(row: rows.Row) -> str:
  return next(iter(row.paper))


def h0_seeds(row: rows.Row, recs: list, scatter: float, source: str) -> str:
  """Whether the paper's value lies within two standard deviations of the difference between
  our mean over ``k`` seeds and one run of the paper's, ``s sqrt(1 + 1 / k)`` for a relative
  seed scatter ``s``: the row's own over three or more seeds, else ``scatter`` (the task's,
  measured as ``source`` says), else the row's own over two."""
  metric, paper = _metric(row), row.paper[_metric(row)]
  values = verdict_lib.finite_values(recs, metric)
  if not values:
    return "not run"
  mean, k = float(np.mean(values)), len(values)
  if k >= 3 or (k == 2 and not math.isfinite(scatter)):
    rel, source = claims.relative_std(metric, values), f"its {k} seeds"
  elif math.isfinite(scatter):
    rel = scatter
  else:
    return "one seed, no measured scatter: undecided"
  sds = (mean - paper) / (rel * mean * math.sqrt(1 + 1 / k))
  verdict = "can explain" if sds <= 2 else "rejected"
  return (f"{paper:.4g} lies {sds:.1f} std of the difference below our mean {mean:.4g} "
          f"(seed scatter {100 * rel:.1f} %, {source}): {verdict}")


def h1_evaluation(row: rows.Row, recs: list) -> str:
  """Whether the smallest of ``row.steps`` single-batch evaluations could reach the paper's
  value, from the first seed's ``batch_minimum`` (mean and std of its batch losses)."""
  measured = diagnostics.measured_batch_minima(recs)
  if not measured:
    return "not measured"
  m, paper = measured[0], row.paper[_metric(row)]
  z, bound = (m["loss"] - paper) / m["std"], normal_minimum(int(row.steps))
  reach = "can explain" if z <= bound else "rejected"
  return (f"{paper:.4g} lies {z:.1f} batch std ({m['std']:.2g}, batches of {m['batch']}) "
          f"below the batches' mean {m['loss']:.4g}; the smallest of {int(row.steps):,} draws "
          f"lies {bound:.1f} below: {reach}")


def study(table: rows.Table, row: rows.Row, recs: list, suffix: str, store: dict,
          scatter: float = math.nan) -> str:
  """The study row ``row.id + suffix`` against the preset and the paper: it explains the
  miss when its own verdict meets or beats the paper (its records read from ``store``, the
  table's archive). Its change from the preset is given in
  standard deviations of the difference of two means, ``s sqrt(1 / k1 + 1 / k2)`` at the
  task's relative seed ``scatter`` ``s`` (left out where none is measured)."""
  study_id = row.id + suffix
  if study_id not in {r.id for r in table.rows}:
    return "no study row"
  study_row = table.row(study_id)
  srecs = records(store, study_id)
  metric, paper = _metric(row), row.paper[_metric(row)]
  values = verdict_lib.finite_values(srecs, metric)
  if not values:
    return "not run"
  if not runner.complete(study_row, srecs):
    steps = ", ".join(str(r.get("steps")) for r in srecs)
    return f"partial ({steps} of {study_row.steps:,} steps): undecided"
  v, base = float(np.mean(values)), verdict_lib.finite_values(recs, metric)
  category = runner.judge_row(study_row, srecs).category
  change = ""
  if base:
    b = float(np.mean(base))
    change = f", {100 * (v / b - 1):+.0f} % against the preset's {b:.4g}"
    if math.isfinite(scatter):
      sd = scatter * b * math.sqrt(1 / len(values) + 1 / len(base))
      change += f" ({(v - b) / sd:+.1f} sd of the difference at the seed scatter)"
  explains = "explains it" if category in ("meets", "beats") else "does not explain it"
  return f"{v:.4g} ({v / paper:.3g} times the paper{change}; {category}): {explains}"


def h4_after_update(row: rows.Row, recs: list) -> str:
  """Whether the row's minimum, read after each batch's update as the released denoise code
  logs it, meets or beats the paper: every seed's minimum times the ratio of the loss after
  the update to the loss before it that the runner's ``after_update`` measured (the mean over
  the seeds that measured it), judged as the row."""
  if "after_update" not in row.diagnostics:
    return "not applicable (the released code logs no loss of this row after an update)"
  measured = diagnostics.measured(recs, "after_update")
  if not measured:
    return "not measured"
  metric, paper = _metric(row), row.paper[_metric(row)]
  ratio = float(np.mean([m["ratio"] for m in measured]))
  scaled = [{**r, "metrics": {**r["metrics"], metric: r["metrics"][metric] * ratio}}
            for r in recs if metric in (r.get("metrics") or {})]
  values = verdict_lib.finite_values(scaled, metric)
  if not values:
    return "not run"
  category = runner.judge_row(row, scaled).category
  v = float(np.mean(values))
  explains = "explains it" if category in ("meets", "beats") else "does not explain it"
  return (f"after its update a batch's loss is {ratio:.3f} times its loss before (mean over "
          f"{len(measured)} seed(s), {measured[0]['steps']:,} steps replayed each); our minimum "
          f"so read {v:.4g} ({v / paper:.3g} times the paper; {category}): {explains}")


def lost_symbols(slots: int, k: int) -> float:
  """The expected number of ``k`` positions drawn uniformly with replacement from ``slots``
  that fall on a position drawn again after them: ``k`` less the expected number of distinct
  positions, ``slots (1 - (1 - 1 / slots)^k)``."""
  return k - slots * (1.0 - (1.0 - 1.0 / slots) ** k)


def h5_released_data(row: rows.Row) -> str:
  """Whether the released denoise data could lower the row's minimum. The released generator
  draws the K positions with replacement from the first T + K - 1 steps and writes the
  symbols in order, so a symbol whose position is drawn again is overwritten but stays a
  target: independent of the input and uniform on S symbols, it costs at least ln S, and the
  loss (a mean over the T + 2K steps) any model reaches rises by at least
  ``lost_symbols * ln S / (T + 2K)``. A harder task cannot explain a paper value below ours."""
  if presets.task_name(row) != "denoise":
    return "not applicable (not the denoise task)"
  from lvf_jax.train import builders  # pylint: disable=g-import-not-at-top
  task = builders.build_pipeline(runner.row_config(row)).task
  lost = lost_symbols(task.T + task.K - 1, task.K)
  added = lost * math.log(task.num_symbols) / task.seq_len
  paper = row.paper[_metric(row)]
  return (f"{lost:.3f} of the {task.K} symbols of a sequence overwritten and still a target, "
          f"at least {added:.2g} added to the loss any model reaches "
          f"({100 * added / paper:.1f} % of the paper's value; a bound from the generator, not "
          f"a run): does not explain it")


#: The hypotheses' column names, in the order of the table's last eight columns.
HYPOTHESES = ("H0: seeds", "H1: one batch", "H2: released initialisation",
              "H3: released Neumann step", "H4: loss after the update", "H5: released data",
              "H6: released init and step", "H7: released code, two kernels")


def row_cells(pages_dir: str = runner.PAGES) -> list:
  """One tuple per studied row: the row, the paper, ours, the verdict and each hypothesis's
  finding (:data:`HYPOTHESES`)."""
  with tempfile.TemporaryDirectory() as no_runs:  # the archives' records alone
    scatters = pages.seed_scatters(no_runs, pages_dir)
  stores = {t: load_store(t, pages_dir) for t in {t for t, _ in MISSES}}  # each read once
  out = []
  for table_id, row_id in MISSES:
    table = rows.get(table_id)
    row = table.row(row_id)
    recs = records(stores[table_id], row_id)
    metric = _metric(row)
    values = verdict_lib.finite_values(recs, metric)
    ours = f"{np.mean(values):.4g} ({len(values)})" if values else "— (0)"
    task = presets.task_name(row)
    scatter = claims.scatter_for(scatters, task, metric)
    source = ("its task's, the median over its rows of two or more seeds"
              if (task, metric) in scatters else
              "the synthetic tasks' pooled seed scatter of minimum losses")
    init, step, both, code = (study(table, row, recs, suffix, stores[table_id], scatter)
                              for suffix in STUDIES)
    out.append((row_id, f"{row.paper[metric]:.4g}", ours, runner.judge_row(row, recs).category,
                h0_seeds(row, recs, scatter, source), h1_evaluation(row, recs), init, step,
                h4_after_update(row, recs), h5_released_data(row), both, code))
  return out


def row_lines(cells: list) -> list:
  """The table of :func:`row_cells`."""
  header = "| row | paper | ours (seeds) | verdict | " + " | ".join(HYPOTHESES) + " |"
  return [header, "|---" * (4 + len(HYPOTHESES)) + "|",
          *("| " + " | ".join(c) + " |" for c in cells)]


def summary_lines(cells: list) -> list:
  """Per hypothesis, on how many rows it can explain the miss, is rejected, or is open."""
  out = []
  for i, name in enumerate(HYPOTHESES, start=4):
    found = [c[i] for c in cells]
    yes = sum(f.endswith(("can explain", "explains it")) and not f.endswith("not explain it")
              for f in found)
    no = sum(f.endswith(("rejected", "does not explain it")) for f in found)
    untested = sum(f == "no study row" or f.startswith("not applicable") for f in found)
    out.append(f"- {name}: can explain {yes} of the {len(cells)} rows, rejected on {no}, "
               f"open (not run, partial or not measured) on {len(cells) - yes - no - untested}"
               + (f", no study row or not applicable for {untested}." if untested else "."))
  return out


def page(pages_dir: str = runner.PAGES) -> str:
  """The page, from the harness's archives alone."""
  intro = __doc__.split("\n\n")[1].replace("\n", " ")
  cells = row_cells(pages_dir)
  return "\n".join([
      "# NC-GRU: why its parenthesis, denoise T = 400 and copy T = 1000 and 2000 rows miss", "",
      f"Generated by `python -m experiments.ncgru_misses` from the harness's archives "
      f"(`docs/reproduction/results/`). {intro}", "",
      "- H0, the seeds: the paper's value (one run) against our mean over k seeds, in "
      "standard deviations of their difference, s sqrt(1 + 1 / k) for the seed scatter s "
      "(the row's own over three or more seeds, else its task's measured one, the median "
      "over the task's rows of two or more seeds, else the pooled one of the synthetic tasks' "
      "minimum losses); beyond two, rejected.",
      "- H1, the evaluation: the runner's `batch_minimum` evaluates the best validation "
      "variables batch by batch; the paper's value, in those batches' standard deviations "
      "below their mean, against the expected smallest of as many normal draws as the run "
      "has steps (Blom). Farther, rejected (a bound: earlier models have larger losses).",
      "- H2, the initialisation: the study row `<row>-released-init` trains the preset with "
      "the released cell's initialisers and nothing else changed; it explains the miss when "
      "its own verdict meets or beats the paper.",
      "- H3, the Neumann step: the study row `<row>-released-step` trains the preset with "
      "the released code's series (`optim.neumann_step='sgd'`: the series takes lr_A dL/dA "
      "while Adam moves A by another step, so U_c is not orthogonal between exact resets) "
      "and nothing else changed; judged as H2. It is a model of that code, not of Alg. 1.",
      "- H4, the logged loss: the released denoise code logs each batch's loss after its "
      "update; the runner's `after_update` replays the run's last steps from a retained "
      "checkpoint (its logged losses reproduced) and measures the mean ratio of each batch's "
      "loss after its update to before it; every seed's minimum times that ratio, judged as "
      "the row, explains the miss when it meets or beats the paper (Table 2's rows only: the "
      "released parenthesis code logs means of 100 losses each taken before its update, as "
      "the harness does, and no copy code was released).",
      "- H5, the data: the released denoise generator draws the K positions with replacement "
      "from the first T + K - 1 steps, so a symbol whose position is drawn again is "
      "overwritten and still a target; independent of the input, each such symbol costs at "
      "least ln S, so the expected number of them, K - N (1 - (1 - 1 / N)^K) for N = T + K - "
      "1, times ln S / (T + 2K) is loss that no model trained on those data goes below: "
      "those data are harder, and cannot explain a paper value below ours (a bound computed "
      "from the generator, not a run; Table 2's rows). Its other differences are left out: "
      "the marker is a zero vector, at a fixed step either way, and the positions may also "
      "fall on the K - 1 steps before it.",
      "- H6, H2 and H3 together: the study row `<row>-released-both` trains the preset with "
      "both changes and nothing else; judged as H2.",
      "- H7, the released code for two kernels: the study row `<row>-released-code` trains "
      "an NC-GRU(U_c, U_r) preset with H6's changes and the released update of its two "
      "kernels (`optim.two_kernel_update='released'`: U_c's skew step from U_r's gradient, "
      "U_r's series from U_c's new inverse), everything read from the released code and "
      "nothing else; judged as H2. A model of that code, not of Alg. 1.",
      "",
      "## What the released code does", "",
      "Read from the code the authors released (no copy task code was released; its cell is "
      "the denoise task's).", "",
      *settings_lines("Secs. 3-4", CODE, SETTINGS), "",
      "## The rows", "", *row_lines(cells), "", "## Where the hypotheses stand", "",
      *summary_lines(cells), ""])


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--pages", default=runner.PAGES, help="the harness's pages directory")
  args = p.parse_args(argv)
  write_page(PAGE, page(args.pages))
  return 0


if __name__ == "__main__":
  sys.exit(main())
