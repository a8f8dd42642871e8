"""Writes the reproduction pages from the per-seed records.

:func:`write_table` merges the records found under a runs directory into the committed
archive (:mod:`experiments.reproduce.archive`) and renders ``docs/reproduction/<table>.md``
and a figure of the learning curves from the archive alone; :func:`write_index` writes the
index with the rows of every table counted per verdict
(:mod:`experiments.reproduce.verdict`), the categories' definitions and the floors.
"""

from __future__ import annotations

import math
import os
import textwrap
from typing import Iterable, Optional

import numpy as np

from experiments.reproduce import archive as archive_lib
from experiments.reproduce import claims as claims_lib
from experiments.reproduce import floors as floors_lib
from experiments.reproduce import rows as rows_lib
from experiments.reproduce import runner, step_times
from experiments.reproduce import verdict as verdict_lib
from experiments.reproduce.rows import Row, Table

#: Metrics shown under a row's own whenever its runs have them (not part of the verdict
#: unless the row's paper values name them).
ALSO_SHOWN = ("test_nll_per_sequence",)
#: Metrics shown for a stand-in row (a config but no paper value: another dataset run with
#: a table's models and settings).
STAND_IN_SHOWN = ("val_loss", "test_loss")
#: The last step's counterpart of a judged metric: ``(key in the record's last metrics or
#: curve, transform)``.
LAST_OF = {"test_loss": ("val_loss", None), "val_loss": ("val_loss", None),
           "test_accuracy": ("val_accuracy", lambda v: 100.0 * v),
           "test_bpc": ("val_loss", lambda v: v / math.log(2.0)),
           "test_ppl": ("val_loss", lambda v: math.exp(min(v, 700.0))),
           "min_train_loss": ("train_loss", None),
           "test_nll_per_sequence": ("val_nll_per_sequence", None)}
NO_VALUE = "—"


def fmt(value: float, metric: str) -> str:
  """``value`` as a page prints ``metric``."""
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
    return fmt(float(v[0]), metric)
  return f"{fmt(float(v.mean()), metric)} ± {fmt(float(v.std(ddof=1)), metric)} ({v.size} seeds)"


def last_value(metric: str, record: dict) -> Optional[float]:
  """``metric``'s counterpart at the record's last step: the last validation (the last
  training loss for ``min_train_loss``), from the record's ``last`` metrics or the last
  point of its curve; None when the record has neither."""
  key, transform = LAST_OF.get(metric, (None, None))
  if key is None:
    return None
  last = (record.get("last") or {}).get("metrics", {})
  value = last.get(key)
  curve = record.get("curve") or {}
  curve_key = {"validation": "val_loss", "train": "train_loss"}.get(curve.get("split"))
  if value is None and key == curve_key and curve.get("points"):
    value = curve["points"][-1][1]
  if value is None:
    return None
  return transform(value) if transform else float(value)


def last_cell(metric: str, records: list) -> str:
  """The page's last-step cell of ``metric``: mean over the seeds that have it."""
  values = [last_value(metric, r) for r in records if not r.get("diverged_at")]
  values = [v for v in values if v is not None]
  if not values or len(values) < len(records):
    return NO_VALUE
  steps = sorted({_last_step(r) for r in records} - {None})
  at = f" (step {steps[0]})" if len(steps) == 1 else ""
  return summarize(values, metric) + at


def _last_step(record: dict) -> Optional[int]:
  if record.get("last"):
    return int(record["last"]["step"])
  points = (record.get("curve") or {}).get("points")
  return int(points[-1][0]) if points else None


def params_cell(records: list) -> str:
  """The run's parameter count, with the papers' effective count where it differs."""
  counts = [r for r in records if r.get("parameters")]
  if not counts:
    return ""
  raw, eff = counts[0]["parameters"], counts[0].get("effective_parameters")
  return f"{raw} ({eff} effective)" if eff and eff != raw else str(raw)


def steps_cell(row: Row, records: list, measured: Optional[dict] = None) -> str:
  """Steps run of the paper's full budget (with the fraction when short, and the hours of a
  core a partial run still needs), and the best validation step.

  The hours come from the records' own pace; where their wall time misses a part of the run
  (``wall_complete`` false), from ``measured``, the row's entry of
  :mod:`experiments.reproduce.step_times`, named with its machine and date."""
  if row.analytic:
    return "computed"
  budget = runner.budget_of(row)
  if not records:
    return f"0 of {budget}"
  ran = min(int(r["steps"]) for r in records)
  text = f"{ran} of {budget}" + (f" ({100.0 * ran / budget:.0f} %)" if ran < budget else "")
  run_budgets = sorted({int(r["budget_steps"]) for r in records if r.get("budget_steps")})
  if run_budgets and run_budgets != [budget]:
    text += f", the run's budget {' / '.join(str(b) for b in run_budgets)}"
  text += _hours_left_text(row, records, measured)
  best = sorted({r.get("best_validation_step") for r in records} - {None})
  if len(best) == 1:
    text += f", best validation at {best[0]}"
  return text


def _hours_left_text(row: Row, records: list, measured: Optional[dict]) -> str:
  resumes = "a run resumes from its checkpoint where its runs directory is kept"
  left = hours_left(row, records)
  if left is not None:
    return f"; about {left:.1f} h of the records' machine left for the full budget ({resumes})"
  if not measured or runner.complete(row, records):
    return ""
  left = step_times.cpu_hours(measured["seconds_per_step"], steps_missing(row, records))
  return (f"; about {left:.1f} h left for the full budget at {_pace(measured)} (the records' "
          f"wall time misses a part of the run; {resumes})")


def _pace(entry: dict) -> str:
  """A :mod:`experiments.reproduce.step_times` entry as the pages print it."""
  load = f", load average {entry['load']:g}" if "load" in entry else ""
  return (f"{entry['seconds_per_step']:.3g} s a step, measured at {entry['commit']} on "
          f"{entry['machine']}{load}, {entry['date']}")


def hours_left(row: Row, records: list) -> Optional[float]:
  """Hours the unfinished part of ``row``'s budget needs at its records' own pace (wall time
  per step, the seeds it still lacks included); None when complete or unmeasured."""
  timed = [r for r in records if r.get("wall_seconds") and r.get("steps")
           and r.get("wall_complete", True) and not r.get("source")]
  if row.analytic or not timed or runner.complete(row, records):
    return None
  per_step = float(np.mean([r["wall_seconds"] / r["steps"] for r in timed]))
  return step_times.cpu_hours(per_step, steps_missing(row, records))


def steps_missing(row: Row, records: list) -> int:
  """Optimiser steps ``row``'s records still lack of the full budget, over its seeds."""
  budget = runner.budget_of(row)
  missing = sum(max(budget - int(r["steps"]), 0) for r in records)
  return missing + max(row.seeds - len(records), 0) * budget


def measured_step(table: Table, row: Row, measured: Optional[dict] = None) -> Optional[dict]:
  """The :mod:`experiments.reproduce.step_times` entry of the row whose runs ``row`` reads
  (``measured``: the stored entries, loaded when None)."""
  measured = step_times.load() if measured is None else measured
  source_table, source = rows_lib.source(table, row)
  return measured.get(f"{source_table.id}/{source.id}")


def not_run_reason(table: Table, row: Row, measured: Optional[dict] = None) -> str:
  """Why ``row`` has no record: its blocker (no data, a GPU row's budget) or ``queued``, with
  the hours its full budget takes on a CPU at a step time measured there
  (:mod:`experiments.reproduce.step_times`)."""
  entry = measured_step(table, row, measured)
  hours = ""
  if entry and not row.analytic:
    total = step_times.cpu_hours(entry["seconds_per_step"], runner.budget_of(row), row.seeds)
    hours = (f"about {total:.1f} h for {row.seeds} x {runner.budget_of(row)} steps at "
             f"{_pace(entry)}")
  if row.blocker:
    return row.blocker + (f"; {hours}" if hours and row.budget_blocked else "")
  if row.analytic:
    return "queued: a computed row"
  return "queued: " + (hours or "step time not measured yet "
                       "(`python -m experiments.reproduce.step_times`)")


def seeds_cell(row: Row, records: list) -> str:
  """Seeds recorded, of the row's planned count when fewer."""
  n = len(records)
  return f"{n} of {row.seeds}" if n and n < row.seeds else str(n or "")


def floor_cell(metric: str, row_floors: dict) -> str:
  if metric not in row_floors:
    return NO_VALUE
  value, what = row_floors[metric]
  return f"{fmt(value, metric)} ({what})"


def verdict_cell(status: verdict_lib.Verdict) -> str:
  return (status.category + (f" **({status.flag})**" if status.flag else "")
          + "".join(f" ({part})" for part in (status.seeds, status.so_far) if part))


def row_results(table: Table, row: Row, workdir: str, archive: Optional[dict] = None
                ) -> list[dict]:
  """The records of ``row`` by seed: the archived ones, replaced by those under
  ``workdir`` that supersede them (a smoke run's too: its page shows it, its verdict
  leaves it out)."""
  by_seed = {}
  if archive:
    for seed, r in archive.get("rows", {}).get(row.id, {}).get("seeds", {}).items():
      by_seed[int(seed)] = r
  for r in runner.results_of_row(table, row, workdir):
    if archive_lib.supersedes(r, by_seed.get(int(r["seed"]))):
      by_seed[int(r["seed"])] = _with_curve(
          row, runner.row_dir(table, row, workdir, r["seed"]), r)
  return [by_seed[k] for k in sorted(by_seed)]


def archive_results(table: Table, workdir: str, archive: dict) -> dict:
  """Merges the finished (not smoke) records of ``table`` under ``workdir`` into
  ``archive`` (``{"rows": {row: {"seeds": {seed: record}}}}``), each with its thinned
  learning curve; a record replaces an archived one only where it
  :func:`~experiments.reproduce.archive.supersedes` it. Returns ``archive``."""
  archive.setdefault("table", table.id)
  entries = archive.setdefault("rows", {})
  for row in table.rows:
    for r in runner.results_of_row(table, row, workdir):
      if r.get("smoke"):
        continue
      seeds = entries.setdefault(row.id, {}).setdefault("seeds", {})
      if not archive_lib.supersedes(r, seeds.get(str(r["seed"]))):
        continue
      seeds[str(r["seed"])] = _with_curve(row, runner.row_dir(table, row, workdir, r["seed"]), r)
  return archive


def _with_curve(row: Row, run_dir: str, record: dict) -> dict:
  """``record`` with the curve and last-step metrics of its run's log, where the run
  directory holds one (a record written before it kept them itself)."""
  if not os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
    return record
  last = record.get("last") or (None if record.get("diverged_at") else
                                runner.last_of_run(run_dir))
  return {**record, "curve": runner.run_curve(row, run_dir), "last": last}


def notes_of(row: Row, archive: Optional[dict]) -> list[str]:
  """The run notes stored beside ``row``'s records, each with the seed it cites; a note
  with a number its record lacks is flagged."""
  entry = (archive or {}).get("rows", {}).get(row.id, {})
  out = []
  for note in entry.get("notes", []):
    record = entry.get("seeds", {}).get(str(note.get("seed")))
    missing = archive_lib.unbacked_numbers(note, record)
    text = f"{note['text']} (seed {note.get('seed')})"
    if missing:
      text += f" **(not in the record: {', '.join(missing)})**"
    out.append(text)
  return out


def _explanation(row: Row) -> str:
  """What the rows named by ``row.explained_by`` show (:func:`runner.explaining_rows`)."""
  factor = f"{verdict_lib.FACTOR_FLAG:g}x"
  explaining = runner.explaining_rows(row)
  others = [n for n in row.explained_by if n not in explaining]
  parts = []
  if explaining:
    parts.append(f"Explained by the recorded {_rows_named(explaining)} (that setting lands "
                 f"within {factor} of the paper's value).")
  if len(others) == 1:
    parts.append(f"The {_rows_named(others)} tests a setting and does not explain it (not "
                 f"recorded at its full budget, or more than {factor} below the paper's "
                 "value too).")
  elif others:
    parts.append(f"The {_rows_named(others)} test a setting each and do not explain it (not "
                 f"recorded at their full budget, or more than {factor} below the paper's "
                 "value too).")
  return " ".join(parts)


def _rows_named(names) -> str:
  quoted = [f"`{n}`" for n in names]
  return ("row " if len(quoted) == 1 else "rows ") + ", ".join(quoted)


def _note_cell(table: Table, row: Row, records: list, archive: Optional[dict],
               measured: Optional[dict] = None) -> str:
  parts = [row.note] if row.note else []
  if row.differs:
    parts.append(f"Differs from the paper: {row.differs}")
  if row.explained_by:
    parts.append(_explanation(row))
  if not records:
    parts.insert(0, f"**not run: {not_run_reason(table, row, measured)}**")
  converted = [f"seed {r['seed']}: {r['source']}" for r in records if r.get("source")]
  if converted:
    parts.append("Converted records, without a learning curve or a last step: "
                 + "; ".join(converted) + ".")
  diverged = [r for r in records if r.get("diverged_at")]
  if diverged:
    at = ", ".join(str(r["diverged_at"]) for r in diverged)
    parts.insert(0, f"**non-finite loss in {len(diverged)} of {len(records)} seeds (at step "
                    f"{at})**")
  parts += notes_of(row, archive)
  return " ".join(as_sentence(p) for p in parts)


def as_sentence(text: str) -> str:
  """``text`` as one sentence of a note cell: an all-lowercase first word capitalised (a
  name such as nnRNN or `copy.py` kept as written) and a full stop added where it ends
  without one (a bold flag, ending in ``**``, is left as it is)."""
  text = text.strip()
  first = text.split(" ", 1)[0]
  if first.isalpha() and first.islower():
    text = text[:1].upper() + text[1:]
  return text if text.endswith((".", "?", "!", "**")) else text + "."


def _wall_cell(records: list) -> str:
  if not records:
    return ""
  wall = f"{sum(r['wall_seconds'] for r in records) / len(records) / 60:.1f} min"
  if any(r.get("resumed_from") and not r.get("wall_complete", False) for r in records):
    wall += " (not counting a part stopped before it recorded a result)"
  return wall


def shown_metrics(row: Row, records: list) -> list:
  """``(metric, paper value or None)`` of every line of the row."""
  shown = list(row.paper.items()) or ([(m, None) for m in STAND_IN_SHOWN] if row.config
                                      else [("", None)])
  if (set(row.paper) & {"min_train_loss", "val_loss", "test_nll_per_sequence"}
      and "test_loss" not in row.paper):
    shown.append(("test_loss", None))  # our test figure beside the one the paper's matches
  shown += [(m, None) for m in ALSO_SHOWN
            if m not in row.paper and any(m in r.get("metrics", {}) for r in records)]
  return shown


def row_verdict(table: Table, row: Row, records: list, stored_floors: Optional[dict] = None
                ) -> verdict_lib.Verdict:
  """The verdict of ``row`` (:func:`experiments.reproduce.runner.judge_row`); a row of a
  study's table (``Table.study``) without a record is ``not run``."""
  if table.study and not [r for r in records if not r.get("smoke")]:
    return verdict_lib.Verdict(verdict_lib.NOT_RUN)
  return runner.judge_row(row, records, stored_floors)


def row_lines(table: Table, row: Row, records: list, archive: Optional[dict],
              stored_floors: dict, measured: dict) -> list[str]:
  """The page's table lines of ``row`` (``measured``: the stored step times,
  :func:`experiments.reproduce.step_times.load`)."""
  status = row_verdict(table, row, records, stored_floors)
  row_floors = runner.row_floors(row, records, stored_floors)
  first = [row.task, row.model]
  rest = [verdict_cell(status), f"{row.paper_params or '?'} / {params_cell(records) or '-'}",
          steps_cell(row, records, measured_step(table, row, measured)),
          seeds_cell(row, records), _wall_cell(records),
          _note_cell(table, row, records, archive, measured)]
  lines = []
  for i, (metric, value) in enumerate(shown_metrics(row, records)):
    ours = summarize([r["metrics"][metric] for r in records
                      if metric in r.get("metrics", {})], metric)
    cells = [*(first if i == 0 else ["", ""]), metric or "-",
             "-" if value is None else fmt(value, metric), floor_cell(metric, row_floors),
             ours, last_cell(metric, records) if records and metric else "",
             *(rest if i == 0 else [""] * len(rest))]
    lines.append("| " + " | ".join(cells) + " |")
  return lines


HEADER = ("| task | model | metric | paper | floor | ours (best validation) | last step | "
          "verdict | params (paper / ours) | steps | seeds | wall time | note |")


def table_markdown(table: Table, workdir: str, figure: Optional[str] = None,
                   archive: Optional[dict] = None, stored_floors: Optional[dict] = None,
                   scatters: Optional[dict] = None) -> str:
  """The reproduction page of ``table`` from the records under ``workdir`` and in
  ``archive`` (``scatters``: :func:`seed_scatters`, by default over the committed pages'
  archives)."""
  stored_floors = floors_lib.load() if stored_floors is None else stored_floors
  scatters = seed_scatters(workdir) if scatters is None else scatters
  measured = step_times.load()
  lines = [f"# {table.heading}", "", table.caption, "",
           f"Generated by `python -m experiments.reproduce {table.id} --report-only` from "
           f"the per-seed records archived in `results/{table.id}.json`. 'ours' is the test "
           "metric at the best validation step unless the metric says otherwise (mean ± "
           "sample standard deviation over seeds); 'last step' is the same quantity on the "
           "validation split at the last step (the last training loss for a minimum "
           f"training loss), {NO_VALUE} where the record lacks it. The floor is the task's "
           "no-memory value (of a validation or test loss: on that split's own sequences); "
           "the verdicts are defined in [the index](README.md).", "",
           HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
  runs = []
  for row in table.rows:
    records = row_results(table, row, workdir, archive)
    lines += row_lines(table, row, records, archive, stored_floors, measured)
    runs += [_run_line(row, r) for r in records]
  if figure:
    lines += ["", f"![learning curves]({os.path.basename(figure)})", "",
              f"The figure: `python -m experiments.reproduce {table.id} --report-only`, the "
              "first recorded seed of every row with a curve; each curve's run (commit, "
              "machine, date) is listed below."]
  lines += claims_lines(table, workdir, archive, scatters)
  lines += diagnostics_lines(table, workdir, archive)
  if runs:
    lines += ["", "## Runs", "",
              "| row | seed | steps | command | commit | machine | date |",
              "|---|---|---|---|---|---|---|", *runs]
  lines += ["", "## Commands of every row (full budget)", ""]
  lines += [f"- `{row.id}`: "
            f"`{runner.command(table, row, steps=row.steps if row.run_steps else None)}`"
            + (f" (config `{row.config}`)" if row.config else "") for row in table.rows]
  return "\n".join(lines) + "\n"


def seed_scatters(workdir: str, out_dir: str = runner.PAGES) -> dict:
  """``{(task, metric): [relative std, ...]}``: the
  :func:`experiments.reproduce.claims.relative_std` of every paper metric of every complete
  trained row with two or more finite seeds, over every table's records (archived under
  ``out_dir``, superseded by those under ``workdir``); a row reading another's runs counts
  once."""
  out: dict = {}
  for t in rows_lib.tables(studies=True).values():
    archive = archive_lib.load(archive_lib.path_for(out_dir, t.id))
    for row in t.rows:
      if row.analytic or row.runs_of or not row.paper:
        continue
      records = [r for r in row_results(t, row, workdir, archive) if not r.get("smoke")]
      if not runner.complete(row, records):
        continue
      for metric in row.paper:
        values = verdict_lib.finite_values(records, metric)
        if len(values) >= 2:
          out.setdefault((runner.task_name(row), metric), []).append(
              claims_lib.relative_std(metric, values))
  return out


def claim_verdicts(table: Table, workdir: str, archive: Optional[dict],
                   scatters: dict) -> list:
  """``(claim, verdict)`` of every claim of ``table``
  (:func:`experiments.reproduce.claims.judge_claim`) from its rows' records; a one-seed row
  stands at the seed scatter ``scatters`` (:func:`seed_scatters`) measure for its task."""
  named = {i for c in table.claims for i in c.better + c.than}
  records = {r.id: [x for x in row_results(table, r, workdir, archive) if not x.get("smoke")]
             for r in table.rows if r.id in named}
  out = []
  for claim in table.claims:
    sides = {}
    for row_id in claim.better + claim.than:
      row, recs = table.row(row_id), records[row_id]
      task = runner.task_name(row)
      side = claims_lib.side_of(recs, metric=claim.metric, complete=runner.complete(row, recs),
                                task=task, paper=row.paper[claim.metric],
                                scatter=claims_lib.scatter_for(scatters, task, claim.metric))
      if side is not None:
        sides[row_id] = side
    out.append((claim, claims_lib.judge_claim(claim, sides)))
  return out


def _cell(text: str) -> str:
  """``text`` safe inside a Markdown table cell."""
  return " ".join(text.split()).replace("|", "\\|")


def claims_lines(table: Table, workdir: str, archive: Optional[dict],
                 scatters: dict) -> list[str]:
  """The page's section on the paper's claims about the table and their verdicts (none
  without claims; ``scatters``: :func:`seed_scatters`)."""
  if not table.claims:
    return []
  lines = ["", "## The paper's claims", "",
           "Each claim of the paper about this table, written as a comparison between rows "
           "(`<`: better in the metric's direction), judged from the records at the paper's "
           "full budget (a row not run or partial leaves it undecided); the statuses and the "
           "separation between two rows are defined in [the index](README.md).", "",
           "| claim | metric | the paper's words | verdict | what decided it |",
           "|---|---|---|---|---|"]
  for claim, result in claim_verdicts(table, workdir, archive, scatters):
    printed = "" if claim.printed_holds else " (the paper's own printed values contradict it)"
    lines.append(f"| {_cell(claim.text)}{printed} | {claim.metric} | \"{_cell(claim.quote)}\" "
                 f"({_cell(claim.section)}) | **{result.status}** | {_cell(result.why)} |")
  return lines


def diagnostics_lines(table: Table, workdir: str, archive: Optional[dict] = None
                      ) -> list[str]:
  """The page's section of the measurements its rows name (``Row.diagnostics``): what each
  one is and its value per recorded seed of each row that names one (none without such
  rows)."""
  from experiments.reproduce import diagnostics  # pylint: disable=g-import-not-at-top
  names = list(dict.fromkeys(n for row in table.rows for n in row.diagnostics))
  if not names:
    return []
  lines = ["", "## Diagnostics", "",
           "Measured by the runner after training (`experiments/reproduce/diagnostics.py`), "
           "blank where a row does not name the measurement or its seed was not measured "
           "(no best validation step, or a record from before the row named it). "
           + "; ".join(diagnostics.DESCRIPTIONS[n] for n in names) + ".",
           "", "| row | seed | steps | " + " | ".join(diagnostics.HEADINGS[n] for n in names)
           + " |", "|---|---|---|" + "---|" * len(names)]
  for row in (r for r in table.rows if r.diagnostics):
    for r in row_results(table, row, workdir, archive):
      values = r.get("diagnostics") or {}
      cells = [diagnostics.cell(n, values.get(n)) for n in names]
      lines.append(f"| {row.id} | {r['seed']} | {r.get('steps')} | " + " | ".join(cells) + " |")
  return lines


def _run_line(row: Row, r: dict) -> str:
  commit = r["commit"] + (f" (re-evaluated at {r['reevaluated']['commit']})"
                          if r.get("reevaluated") else "")
  source = f" ({r['source']})" if r.get("source") else ""
  return (f"| {row.id} | {r['seed']} | {r.get('steps')} | `{r['command']}`{source} | "
          f"{commit} | {r['machine']} | {r['date']} |")


def curves_of(table: Table, workdir: str, archive: Optional[dict] = None) -> list:
  """``(label, points, split)`` of the first seed of every row that has a learning curve
  (the run's own under ``workdir``, else the archived one). Rows of the table that read the
  same runs (``Row.runs_of``) give one curve, labelled by the row that trains when it is in
  the table."""
  curves, drawn = [], set()
  for row in table.rows:
    source_table, source = rows_lib.source(table, row)
    if (source_table.id, source.id) in drawn:
      continue
    records = row_results(table, row, workdir, archive)
    if not records:
      continue
    split = runner.curve_split(row)
    run_dir = runner.row_dir(table, row, workdir, records[0]["seed"])
    pts = (runner._run_curve(run_dir, split)  # pylint: disable=protected-access
           or (records[0].get("curve") or {}).get("points", []))
    if pts:
      drawn.add((source_table.id, source.id))
      named = source if source_table.id == table.id else row
      curves.append((f"{named.model} ({named.task})", np.asarray(pts, np.float64), split))
  return curves


def plot_table(table: Table, curves: list, path: str) -> Optional[str]:
  """The learning ``curves`` (:func:`curves_of`) of ``table`` in one figure at ``path``;
  None if there are none."""
  from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
  if not curves:
    return None
  fig = Figure(figsize=(7.5, 4.5))
  ax = fig.subplots()
  for label, pts, split in curves:
    ax.plot(pts[:, 0], pts[:, 1], label=f"{label}, {split}")
  if all(float(np.min(p[:, 1])) > 0 for _, p, _ in curves):
    ax.set_yscale("log")
  ax.set_xlabel("optimiser step")
  ax.set_ylabel("loss")
  ax.set_title(textwrap.fill(table.heading, 85), fontsize=9)
  ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  return path


def write_table(table: Table, workdir: str, out_dir: str) -> str:
  """Merges the records under ``workdir`` into the archive
  ``<out_dir>/results/<table.id>.json``, writes ``<out_dir>/<table.id>.md`` (and its
  ``.png``) from it and returns the Markdown path."""
  os.makedirs(out_dir, exist_ok=True)
  store = archive_lib.path_for(out_dir, table.id)
  archive = archive_results(table, workdir, archive_lib.load(store))
  archive_lib.save(store, archive)
  png = os.path.join(out_dir, f"{table.id}.png")
  figure = plot_table(table, curves_of(table, workdir, archive), png)
  if figure is None and os.path.exists(png):
    os.remove(png)  # no record has a curve: a figure would show runs without records
  path = os.path.join(out_dir, f"{table.id}.md")
  with open(path, "w") as f:
    f.write(table_markdown(table, workdir, figure, archive,
                           scatters=seed_scatters(workdir, out_dir)))
  return path


def count_rows(table: Table, workdir: str, out_dir: str, stored_floors: dict) -> dict:
  """``{category: rows}`` of ``table`` (the categories of
  :data:`experiments.reproduce.verdict.CATEGORIES` and ``''`` for stand-in rows)."""
  archive = archive_lib.load(archive_lib.path_for(out_dir, table.id))
  counts = {c: 0 for c in verdict_lib.CATEGORIES}
  counts[""] = 0
  for row in table.rows:
    records = row_results(table, row, workdir, archive)
    counts[row_verdict(table, row, records, stored_floors).counted] += 1
  return counts


def _floors_lines(stored: dict) -> list[str]:
  """The index's lines on the floors: what they are and the file they come from."""
  path = os.path.relpath(floors_lib.PATH, runner.ROOT)
  lines = ["## Floors", "",
           "A floor is what a model without memory scores (`experiments/reproduce/floors.py`): "
           "the synthetic tasks' no-memory loss (recorded with every run; a validation or "
           "test loss is held against that split's own, which for adding's few hundred "
           "targets differs from the expectation 1/6), chance accuracy "
           "(10 %) on the image tasks, and the values below, computed from the data on the "
           "test split (music: NLL per frame, fitted on the training split, frame-weighted and "
           "as the per-piece mean (`*_per_piece`); the floor is the lower of the two models)."]
  if not stored:
    return lines + ["", f"`{path}` is missing: run `python -m experiments.reproduce.floors`."]
  info = floors_lib.load_info()
  lines += ["", "| data | floor | value |", "|---|---|---|"]
  for task, values in sorted(stored.items()):
    lines += [f"| {task} | {k} | {v:.4g} |" for k, v in sorted(values.items())]
  lines += ["", f"Written to `{path}` by `{info.get('command')}` at commit "
                f"{info.get('commit')} on {info.get('machine')}, {info.get('date')}."]
  return lines


def _count_lines(tables: list, workdir: str, out_dir: str, stored: dict, what: str,
                 unjudged: str) -> list[str]:
  """The index's table of ``tables`` with their rows counted per verdict, and the total;
  ``what`` heads their citation column and ``unjudged`` the count of rows without a
  verdict."""
  order = list(verdict_lib.CATEGORIES)
  lines = [f"| table | {what} | rows | " + " | ".join(order) + f" | {unjudged} |",
           "|---|---|---|" + "---|" * (len(order) + 1)]
  totals = {c: 0 for c in order + [""]}
  for t in tables:
    counts = count_rows(t, workdir, out_dir, stored)
    for c in totals:
      totals[c] += counts[c]
    name = f"[{t.id}]({t.id}.md)" + ("" if t.study else f" Table {t.number}")
    lines.append(f"| {name} | {t.citation} | {len(t.rows)} | "
                 + " | ".join(str(counts[c]) for c in order) + f" | {counts['']} |")
  lines.append(f"| all | | {sum(len(t.rows) for t in tables)} | "
               + " | ".join(str(totals[c]) for c in order) + f" | {totals['']} |")
  return lines


def count_claims(table: Table, workdir: str, out_dir: str, scatters: dict) -> dict:
  """``{status: claims}`` of ``table``'s claims (``scatters``: :func:`seed_scatters`)."""
  archive = archive_lib.load(archive_lib.path_for(out_dir, table.id))
  counts = dict.fromkeys(claims_lib.STATUSES, 0)
  for _, result in claim_verdicts(table, workdir, archive, scatters):
    counts[result.status] += 1
  return counts


def _claims_count_lines(tables: list, workdir: str, out_dir: str,
                        scatters: dict) -> tuple[list, dict]:
  """The index's table of the claims counted per status (``scatters``: :func:`seed_scatters`),
  and the totals."""
  order = list(claims_lib.STATUSES)
  lines = ["| table | claims | " + " | ".join(order) + " |", "|---|---|" + "---|" * len(order)]
  totals = dict.fromkeys(order, 0)
  for t in tables:
    if not t.claims:
      continue
    counts = count_claims(t, workdir, out_dir, scatters)
    for c in order:
      totals[c] += counts[c]
    lines.append(f"| [{t.id}]({t.id}.md) Table {t.number} | {len(t.claims)} | "
                 + " | ".join(str(counts[c]) for c in order) + " |")
  lines.append(f"| all | {sum(totals.values())} | "
               + " | ".join(str(totals[c]) for c in order) + " |")
  return lines, totals


def _verdict_lines() -> list[str]:
  """The index's definitions: the tolerance of each metric kind with its reason, the
  categories, and the claims' statuses."""
  return [
      "## Verdicts", "",
      "Each judged metric is compared as the mean over seeds with the paper's value, within a "
      "tolerance set by the metric's kind (`experiments/reproduce/verdict.py`):", "",
      *[f"- {kind}: {why}." for kind, why in verdict_lib.TOLERANCES.items()], "",
      f"The seeds' spread (two standard errors of the mean) may widen a tolerance, to at most "
      f"{verdict_lib.SPREAD_CAP:g} times the kind's own; a seed worse than the paper by more "
      f"than {verdict_lib.WORST_SEED:g} times the tolerance makes the row miss (the page says "
      "'k of n seeds' where the seeds fall on both sides); every recorded seed is judged. The "
      "budget is the paper's (the preset's where the paper gives none, as the row's note "
      "says), never the run's own. The categories, decided in the order not run, partial, "
      "at floor, misses, unexplained, beats, meets:", "",
      *[f"- `{c}`: {verdict_lib.CATEGORIES[c]}." for c in verdict_lib.CATEGORIES], "",
      "## Claims", "",
      "Each table lists the claims its paper makes about it, as comparisons between rows, "
      "with the paper's sentence (`experiments/reproduce/claims.py`). Two rows are separated "
      "when their means differ by more than the larger of their combined two standard errors "
      "and the tolerance of the metric's kind at the worse one. A row with one seed has no "
      "spread of its own: its standard error is its value times the seed scatter measured "
      "where several seeds ran (the median relative standard deviation of the complete rows "
      "of its task and metric with two or more seeds, a row that varies a recipe to test a "
      "hypothesis included, since its seeds measure the same task's training noise and "
      "leaving a measurement out for what it decides would choose the answer; for a "
      "synthetic task's minimum loss without one, of every such row of that kind), or none "
      "where nothing is measured; "
      "the claim's line names the scatter it used. A claim is:", "",
      *[f"- `{c}`: {why}." for c, why in claims_lib.STATUSES.items()]]


def _scatter_lines(scatters: dict) -> list[str]:
  """The index's table of the seed scatters a one-seed row borrows
  (:func:`seed_scatters`), per task and metric, with the pooled value of the synthetic
  tasks' minimum losses."""
  lines = ["The seed scatters measured in the records (relative standard deviation of a "
           "complete row with two or more seeds), which a one-seed row of the same task and "
           "metric borrows:", "",
           "| task | metric | rows | relative standard deviations | median |",
           "|---|---|---|---|---|"]
  for (task, metric), values in sorted(scatters.items()):
    shown = ", ".join(f"{v:.3g}" for v in sorted(values))
    lines.append(f"| {task} | {metric} | {len(values)} | {shown} | "
                 f"{claims_lib.scatter_for(scatters, task, metric):.3g} |")
  pooled = claims_lib.pooled_scatter(scatters)
  return lines + ["", "A synthetic task's minimum loss without a measurement of its own borrows "
                      f"the median over every such row: {pooled:.3g}."]


def write_index(tables: dict, workdir: str, out_dir: str) -> str:
  """Writes ``<out_dir>/README.md``: every table with its rows counted per verdict and its
  claims per status, the definitions and the floors; and the summary at the top of the
  reproduction guide beside ``out_dir`` (:func:`write_summary`)."""
  stored = floors_lib.load()
  papers = [t for t in tables.values() if not t.study]
  scatters = seed_scatters(workdir, out_dir)
  claim_lines, claim_totals = _claims_count_lines(papers, workdir, out_dir, scatters)
  row_lines_ = _count_lines(papers, workdir, out_dir, stored, "paper", "stand-in")
  lines = ["# Reproduction of the papers' tables", "",
           "One page per table of the four source papers. Every numeric cell of a table is a "
           "row (`experiments/reproduce/tables/`) with the config that runs it; a page shows "
           "the paper's value, the task's floor and ours, or why a row has not run (no data, "
           "the budget of a GPU row, or queued, with the hours its budget takes at a measured step "
           "time), and "
           "the paper's claims about the table with their verdicts. Every figure on a page is "
           "a per-seed record archived in `results/` (one JSON file per table), and "
           "`python -m experiments.reproduce all --report-only` rebuilds every page from "
           "those records alone; `python -m experiments.reproduce <table>` runs a table "
           "(resumable).", "", *_verdict_lines(), "",
           *_scatter_lines(scatters), "", "## The papers' claims", "",
           *claim_lines, "", "## The rows", "", *row_lines_]
  studies = [t for t in tables.values() if t.study]
  if studies:
    lines += ["", "## Beyond the papers", "",
              "Tables of this repository's own studies, run by the same harness: their rows "
              "have no paper value, so their only verdicts are `not run`, `partial` and "
              "`at floor`; 'above floor' counts the rows that ran their full budget and are "
              "better than the floor.", "",
              *_count_lines(studies, workdir, out_dir, stored, "study", "above floor")]
  lines += ["", "A stand-in row runs a table's models on a dataset the paper did not use "
                "(no paper value: no verdict, unless its runs stop short of the budget or a "
                "loss is at its task's floor at the full budget).", "",
            *_floors_lines(stored)]
  os.makedirs(out_dir, exist_ok=True)
  path = os.path.join(out_dir, "README.md")
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
  write_summary(os.path.join(os.path.dirname(os.path.abspath(out_dir)), "reproduction.md"),
                claim_totals, row_lines_[-1])
  return path


SUMMARY_START, SUMMARY_END = "<!-- summary:start -->", "<!-- summary:end -->"


def write_summary(guide: str, claim_totals: dict, rows_total: str) -> None:
  """Rewrites the block between :data:`SUMMARY_START` and :data:`SUMMARY_END` of ``guide``
  (the reproduction guide; nothing when it lacks the markers) with how many claims hold and
  how many rows meet or beat, from the index's counts."""
  if not os.path.exists(guide):
    return
  with open(guide) as f:
    text = f.read()
  if SUMMARY_START not in text or SUMMARY_END not in text:
    return
  cells = [c.strip() for c in rows_total.strip("|").split("|")]
  counts = dict(zip(["all", "", "rows", *verdict_lib.CATEGORIES, "stand-in"], cells))
  claims = ", ".join(f"{n} {status}" for status, n in claim_totals.items())
  block = (f"{SUMMARY_START}\n**Where the papers stand** (generated from the records by "
           "`python -m experiments.reproduce all --report-only`): of the papers' "
           f"{sum(claim_totals.values())} claims about their tables, {claims}; of their "
           f"{counts['rows']} rows, {counts[verdict_lib.MEETS]} meet and "
           f"{counts[verdict_lib.BEATS]} beat the paper, {counts[verdict_lib.MISSES]} miss, "
           f"{counts[verdict_lib.UNEXPLAINED]} are unexplained, {counts[verdict_lib.PARTIAL]} "
           f"are partial, {counts[verdict_lib.AT_FLOOR]} are at floor and "
           f"{counts[verdict_lib.NOT_RUN]} have not run ([the index](reproduction/README.md))."
           f"\n{SUMMARY_END}")
  head, rest = text.split(SUMMARY_START, 1)
  with open(guide, "w") as f:
    f.write(head + block + rest.split(SUMMARY_END, 1)[1])
