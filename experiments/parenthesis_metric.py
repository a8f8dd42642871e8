"""What NC-GRU Table 1's "minimum attained loss" measures, and at which budget.

The parenthesis rows (Mucllari et al. 2022, arXiv:2208.06496, Table 1) are judged by the
smallest training loss the harness logs, a mean over ``train.log_every`` consecutive batches of
16 sequences. At the first preset (10,000 steps, means of 10) the NC-GRU rows reached 5 to 16
times the paper's values. Three hypotheses, one at a time: (1) the paper's minimum is over
single batches, whose losses scatter around the running mean, so their minimum lies far below
the smallest mean of ten; (2) the budget: the paper trains 200 epochs at batch 16 of a
training set whose size it does not give, so more steps than 10,000 may be what it ran
(``--steps``); (3) the authors' code, read for both: what its epoch is and which loss it logs.
Each run of this script trains a row's config (seed 0) with every batch's loss logged
(``log_every = 1``) and records the minimum over single batches and over means of 10 and 100
consecutive batches; the harness's rows of Table 1 are then run at the setting the code shows.

``python -m experiments.parenthesis_metric [--rows ...]`` adds the runs to
``docs/results/parenthesis_metric.json`` (resumable: a recorded row is skipped) and writes
``docs/PARENTHESIS.md`` from the records and the harness's archive of Table 1
(``--report-only``: from the records alone).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from experiments.reproduce import archive, provenance, rows, runner

RECORD = os.path.join(provenance.ROOT, "docs", "results", "parenthesis_metric.json")
PAGE = os.path.join(provenance.ROOT, "docs", "PARENTHESIS.md")
TABLE_RECORDS = os.path.join(provenance.ROOT, "docs", "reproduction", "results", "ncgru-t1.json")
#: The authors' code, as read (github.com/emucllari1/NC-GRU at this commit).
CODE = "emucllari1/NC-GRU at b86f34e, `parenthesis_task/`"
ROWS = ("parenthesis-ncgru-uruc-t100", "parenthesis-ncgru-uc-t100",
        "parenthesis-ncgru-uruc-t200", "parenthesis-gru-t100")
WINDOWS = (1, 10, 100)


def window_minima(losses, windows=WINDOWS) -> dict:
  """``{w: the smallest mean of w consecutive losses}`` (non-overlapping windows)."""
  x = np.asarray(losses, np.float64)
  return {str(w): float(x[: len(x) // w * w].reshape(-1, w).mean(axis=1).min()) for w in windows}


def run_row(row_id: str, workdir: str, steps: int = 0) -> dict:
  """Trains ``row_id`` (seed 0, its budget or ``steps``) logging every batch; its record."""
  from lvf_jax import train  # pylint: disable=g-import-not-at-top
  table = rows.get("ncgru-t1")
  row = table.row(row_id)
  c = runner.row_config(row, seed=0, steps=steps or None)
  c.train.log_every = 1
  run_dir = os.path.join(workdir, f"{row_id}-{c.train.steps}")
  t0 = time.time()
  train.train_and_evaluate(c, run_dir)
  losses = [r["loss"] for r in runner._records(run_dir)  # pylint: disable=protected-access
            if r["split"] == "train"]
  return {"row": row_id, "paper": row.paper["min_train_loss"], "steps": len(losses),
          "batch_size": int(c.train.batch_size), "minima": window_minima(losses),
          "wall_seconds": round(time.time() - t0, 1), "commit": provenance.started_at_commit(),
          "machine": provenance.machine(), "date": provenance.utc_now(),
          "command": "python -m experiments.parenthesis_metric --rows " + row_id
                     + (f" --steps {steps}" if steps else "")}


def load() -> list:
  if not os.path.exists(RECORD):
    return []
  with open(RECORD) as f:
    return json.load(f)["runs"]


def save(runs: list) -> None:
  os.makedirs(os.path.dirname(RECORD), exist_ok=True)
  with open(RECORD + ".tmp", "w") as f:
    json.dump({"runs": runs}, f, indent=1)
  os.replace(RECORD + ".tmp", RECORD)


#: (setting, the paper's Sec. 4.1, the authors' code, the harness's rows), read from both.
SETTINGS = (
    ("budget", "200 epochs at batch 16", "`N_TRAIN_STEPS 20000` in every script, a fresh batch of "
     "16 per step; one line of its loss log per 100 steps, so 200 lines", "20,000 steps"),
    ("logged loss", "'minimum attained loss values'", "each line the mean task loss of the "
     "100 batches since the last line (`task_loss_acc / PRINT_PERIOD`)",
     "the training loss logged every 100 steps, the mean of those 100 batches"),
    ("loss", "not stated", "squared error between the outputs and the one-hot counts "
     "(`implied_activation_fn='identity'`)", "the same (`loss_kind='mse'`)"),
    ("tokens", "10 pairs of parentheses and noise", "3 bracket types and 1 noise token, i.i.d.",
     "the code's"),
    ("hidden sizes", "LSTM 42, GRU 50, scoRNN 110, GORU 64, NC-GRU 56",
     "the scripts: GRU 100, GORU 60 (at T = 100), the others as the paper", "the paper's"),
    ("optimiser", "Adam 1e-3 for every parameter",
     "the scoRNN script: RMSprop 1e-3 for the input and output weights", "the paper's"),
    ("weight decay", "not stated", "1e-4 times half the squared norm of the variables named "
     "`W*` (the output matrix `Wo`), added to the trained loss, not to the logged one",
     "none (`lvf_jax.optim.make_optimizer` has none)"),
)


def settings_lines() -> list:
  """The settings of the paper, the authors' code and the harness, one row each."""
  lines = [f"| setting | paper (Sec. 4.1) | authors' code ({CODE}) | harness |",
           "|---|---|---|---|"]
  return lines + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in SETTINGS]


def table_lines(path: str = TABLE_RECORDS) -> list:
  """Table 1's rows from the harness's archive: the paper, ours over seeds, the verdict."""
  stored = archive.load(path).get("rows", {})
  lines = ["| row | paper | ours: min training loss (mean ± std over seeds) | seeds | steps "
           "(budget) | verdict |", "|---|---|---|---|---|---|"]
  for row in rows.get("ncgru-t1").rows:
    records = [r for r in stored.get(row.id, {}).get("seeds", {}).values()
               if not r.get("smoke")]
    values = [r["metrics"]["min_train_loss"] for r in records
              if "min_train_loss" in r.get("metrics", {})]
    ours = (f"{np.mean(values):.3g} ± {np.std(values, ddof=1):.2g}" if len(values) > 1
            else f"{values[0]:.3g}" if values else "—")
    steps = ", ".join(sorted({str(r.get("steps")) for r in records})) or "—"
    lines.append(f"| {row.id} | {row.paper['min_train_loss']:.3g} | {ours} | {len(values)} | "
                 f"{steps} ({row.steps}) | {runner.judge_row(row, records).category} |")
  return lines


def page(runs: list) -> str:
  """The page, from the records alone."""
  lines = ["# NC-GRU Table 1: which minimum the parenthesis losses are", "",
           f"Generated by `python -m experiments.parenthesis_metric --report-only` from "
           f"`docs/results/parenthesis_metric.json`. {__doc__.split(chr(10) + chr(10))[1]}", "",
           "| row | paper | min over single batches | min over means of 10 | min over means of "
           "100 | ratio to the paper (single, 10) | steps | command | commit | machine | date |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
  for r in runs:
    m = r["minima"]
    lines.append(f"| {r['row']} | {r['paper']:.3g} | {m['1']:.3g} | {m['10']:.3g} | "
                 f"{m['100']:.3g} | {m['1'] / r['paper']:.2f}, {m['10'] / r['paper']:.2f} | "
                 f"{r['steps']} | `{r['command']}` | {r['commit']} | {r['machine']} | "
                 f"{r['date']} |")
  lines += ["", "The ratio says how far each reading of the metric lies from the paper's value; "
                "a reading that brings the NC-GRU rows to the paper's values is the paper's "
                "metric, one that leaves them well above it is not. The harness's verdicts "
                "read the means of 10 at the first preset.", "",
            "## What the authors' code does", "",
            "Read from the code the authors released for the paper; the paper is the "
            "specification where it speaks, the code where it is silent.", "",
            *settings_lines(), "",
            "## Table 1 at the code's budget", "",
            "The harness's rows ([ncgru-t1](reproduction/ncgru-t1.md)) with the preset "
            "`configs/parenthesis.py` at the code's budget and logged loss; a row's records "
            "at an earlier budget show it in the steps column and keep it partial.", "",
            *table_lines(), "",
            "## Reading", "", *READING]
  return "\n".join(lines) + "\n"


#: What the records above decide (no measured number: those are in the table).
READING = [
    "- **Single batches do not explain the gap.** At the preset's 10,000 steps the minimum "
    "over single batches lies below the smallest mean of ten, but every NC-GRU row stays "
    "several times above the paper's value under every reading, so the reading of the metric "
    "is not what separates the rows from the paper.",
    "- **The budget does.** The same NC-GRU row trained four times as long ends below the "
    "paper's value under every reading: its minimum is still falling at 10,000 steps. The "
    "paper trains 200 epochs at batch 16 of a training set whose size it does not give, so its "
    "budget in steps is unknown; the preset's 10,000 steps are too few for the NC-GRU rows to "
    "reach the paper.",
    "- **The order of Table 1 is a budget question too.** The GRU at the preset's budget is "
    "below the paper's GRU value under every reading, the reverse of the paper's gap between "
    "the GRU and the NC-GRUs; the claims of Table 1 can only be judged with every row at one "
    "longer budget (not run here: one seed of one row at four times the steps, above).",
]


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--rows", nargs="*", default=list(ROWS))
  p.add_argument("--steps", type=int, default=0, help="steps per run (default: the row's)")
  p.add_argument("--workdir", default="/tmp/parenthesis_metric")
  p.add_argument("--report-only", action="store_true")
  args = p.parse_args(argv)
  runs = load()
  if not args.report_only:
    for row_id in args.rows:
      steps = args.steps or rows.get("ncgru-t1").row(row_id).steps
      if any(r["row"] == row_id and r["steps"] == steps for r in runs):
        continue
      runs.append(run_row(row_id, args.workdir, args.steps))
      save(runs)
  with open(PAGE, "w") as f:
    f.write(page(runs))
  print(page(runs))
  return 0


if __name__ == "__main__":
  sys.exit(main())
