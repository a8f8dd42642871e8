"""One command for the papers' tables and the repository's own studies
(``long-memory-copy``, ``long-memory-adding``)::

    python -m experiments.reproduce --list                  # every table and row
    python -m experiments.reproduce lvf-t4                  # run a table (resumes)
    python -m experiments.reproduce lvf-t3 --rows jsb-lvf   # a selection of rows
    python -m experiments.reproduce lvf-t3 --report-only    # rewrite the page only
    python -m experiments.reproduce lvf-t4 --rows copy-lvf --report-only --release

Runs go to ``--workdir`` (default ``runs/reproduce``), one directory per table, row and
seed (:mod:`experiments.reproduce.runner`); finished seeds are skipped and unfinished ones
resume from their last checkpoint. After the runs, their per-seed records are merged into the
archive ``docs/reproduction/results/<table>.json`` (``--out``/results, committed) and
``docs/reproduction/<table>.md`` is rewritten from the archive alone
(:mod:`experiments.reproduce.pages`), with each row's verdict
(:mod:`experiments.reproduce.verdict`) and its task's floor
(:mod:`experiments.reproduce.floors`). Rows that cannot run here (no data, no model) are
listed with the reason and their command; GPU rows, blocked by their budget on a CPU, run
with ``--include-blocked``. SIGTERM or SIGINT (Ctrl-C) stops the run in
progress after its step, checkpointed, with its partial record written; the command then
rewrites that table's page and exits with 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import os
import sys

from experiments.reproduce import pages, rows, runner
from lvf_jax.train import StoppedBySignal


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="python -m experiments.reproduce", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("tables", nargs="*", help="table ids, e.g. lvf-t4 ncgru-t1 ('all': every one)")
  p.add_argument("--rows", default="", help="comma-separated row ids (default: every row)")
  p.add_argument("--seeds", type=int, default=0,
                 help="seeds per row (default: the row's own count)")
  p.add_argument("--seed", type=int, default=-1,
                 help="run only this seed index (to run the seeds of a row in parallel)")
  p.add_argument("--steps", type=int, default=0,
                 help="optimiser steps per run (default: the row's budget); for smoke runs")
  p.add_argument("--time-limit", type=float, default=0.0,
                 help="seconds of training per run after which it stops at its next log step "
                      "(checkpointed; its result counts the steps reached; running again "
                      "resumes); 0: none")
  p.add_argument("--workdir", default="",
                 help="runs directory (default runs/reproduce, runs/reproduce-smoke with --smoke)")
  p.add_argument("--out", default="",
                 help="pages directory (default docs/reproduction; with --smoke, pages/ in "
                      "the workdir)")
  p.add_argument("--smoke", action="store_true",
                 help="tiny data and --steps (default 2) steps: checks that rows run")
  p.add_argument("--report-only", action="store_true", help="only rewrite the pages")
  p.add_argument("--reevaluate", action="store_true",
                 help="train nothing: add the test metrics that finished runs lack by "
                      "re-measuring their best variables with the current code")
  p.add_argument("--include-blocked", action="store_true",
                 help="also run rows blocked by their budget (GPU rows; not missing data)")
  p.add_argument("--list", action="store_true", help="list tables and rows, run nothing")
  p.add_argument("--release", action="store_true",
                 help="copy the selected rows that meet or beat the paper into lvf_jax/zoo (the "
                      "seed with the best validation loss)")
  return p


def _select(args) -> list[rows.Table]:
  all_tables = rows.tables(studies=True)
  names = list(all_tables) if args.tables == ["all"] else args.tables
  if not names:
    raise SystemExit("name at least one table (or 'all'); --list shows them.")
  return [rows.get(n) for n in names]


def main(argv=None) -> int:
  args = _parser().parse_args(argv)
  if args.seeds < 0 or args.steps < 0 or args.time_limit < 0:
    raise SystemExit("--seeds, --steps and --time-limit must be >= 0.")
  if args.list:
    for t in rows.tables(studies=True).values():
      print(f"{t.id}: {t.heading}: {t.caption}")
      for r in t.rows:
        state = (f"  [{r.blocker}]" if r.blocker else "") + (
            f"  [the runs of {r.runs_of}]" if r.runs_of else "")
        print(f"  {r.id:32s} {r.model} / {r.task} -> {r.config}{state}")
    return 0
  smoke_root = os.path.join(runner.ROOT, "runs", "reproduce-smoke")
  args.workdir = args.workdir or (smoke_root if args.smoke else
                                  os.path.join(runner.ROOT, "runs", "reproduce"))
  args.out = args.out or (os.path.join(args.workdir, "pages") if args.smoke else
                          runner.PAGES)
  runner.started_at_commit()
  tables = _select(args)
  wanted = [s for s in args.rows.split(",") if s]
  stopped = None  # a run stopped by SIGTERM / SIGINT: its table's page is written, then exit
  for table in tables:
    selected = [table.row(r) for r in wanted] if wanted else list(table.rows)
    if args.reevaluate:
      for row in selected:
        runner.reevaluate_row(table, row, args.workdir)
    elif not args.report_only:
      for row in selected:
        runnable = (row.config is not None or row.analytic is not None) and (
            row.blocker is None or (row.budget_blocked and (args.include_blocked or args.smoke)))
        if not runnable:
          print(f"reproduce: {table.id}/{row.id}: not run ({row.blocker})")
          continue
        seeds = [args.seed] if args.seed >= 0 else range(args.seeds or row.seeds)
        for seed in seeds:
          try:
            runner.run_row(table, row, args.workdir, seed=seed, steps=args.steps or None,
                            smoke=args.smoke, time_limit=args.time_limit)
          except StoppedBySignal as e:  # the row's partial result is written
            print(f"reproduce: {table.id}/{row.id} seed {seed}: {e}")
            stopped = e
            break
        if stopped is not None:
          break
    path = pages.write_table(table, args.workdir, args.out)
    print(f"reproduce: wrote {path}")
    if args.release:
      for row in selected:
        print(f"reproduce: release {table.id}/{row.id}: "
              f"{runner.release_row(table, row, args.workdir)}")
    if stopped is not None:
      break
  index = pages.write_index(rows.tables(studies=True), args.workdir, args.out)
  print(f"reproduce: wrote {index}")
  return 0 if stopped is None else stopped.exit_status


if __name__ == "__main__":
  sys.exit(main())
