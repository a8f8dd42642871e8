"""experiments/ncgru_misses.py: each hypothesis for the NC-GRU misses judged from records."""

import math

import numpy as np
import pytest

from experiments import ncgru_misses as nm
from experiments.denoise_metric import normal_minimum
from experiments.reproduce import archive, rows

COPY = rows.get("ncgru-t4").row("copy-ncgru-uc-t1000")
PAPER = COPY.paper["val_loss"]


def _record(value, metric="val_loss", steps=10000, batch_minimum=None):
  r = {"seed": 0, "steps": steps, "metrics": {metric: value}}
  if batch_minimum:
    r["diagnostics"] = {"batch_minimum": batch_minimum}
  return r


def test_the_seeds_hypothesis_uses_the_scatter_of_a_difference_against_one_run():
  # three seeds: their own scatter; the difference's sd adds one run of the paper's
  recs = [_record(0.014), _record(0.016), _record(0.018)]
  rel = 0.002 / 0.016
  sds = (0.016 - PAPER) / (rel * 0.016 * math.sqrt(1 + 1 / 3))
  text = nm.h0_seeds(COPY, recs, 0.5, "task")
  assert f"lies {sds:.1f} std of the difference" in text and "its 3 seeds" in text
  assert text.endswith("rejected" if sds > 2 else "can explain")
  # two seeds stand at the task's scatter where one is measured, else at their own
  two = [_record(0.014), _record(0.016)]
  assert "seed scatter 50.0 %, task" in nm.h0_seeds(COPY, two, 0.5, "task")
  assert "its 2 seeds" in nm.h0_seeds(COPY, two, math.nan, "")
  # one seed at a scatter that puts the paper within two sds, then one that does not
  wide = nm.h0_seeds(COPY, [_record(0.01)], 0.5, "pooled")
  assert wide.endswith("can explain") and "pooled" in wide
  assert nm.h0_seeds(COPY, [_record(0.02)], 0.05, "task").endswith("rejected")
  assert nm.h0_seeds(COPY, [_record(0.02)], math.nan, "").endswith("undecided")
  assert nm.h0_seeds(COPY, [], 0.1, "") == "not run"


@pytest.mark.parametrize("std, verdict", [(0.01, "can explain"), (0.0002, "rejected")])
def test_the_evaluation_hypothesis_compares_with_the_smallest_of_the_runs_draws(std, verdict):
  bm = {"batch": 50, "size": 10000, "loss": 0.0138, "min": 0.0133, "std": std}
  text = nm.h1_evaluation(COPY, [_record(0.0138, batch_minimum=bm)])
  assert f"lies {(0.0138 - PAPER) / std:.1f} batch std" in text
  assert f"lies {normal_minimum(COPY.steps):.1f} below" in text
  assert text.endswith(verdict)
  assert nm.h1_evaluation(COPY, [_record(0.0138)]) == "not measured"


def _pages(tmp_path, study_value, study_steps=10000):
  archive.save(archive.path_for(str(tmp_path), "ncgru-t4"), {"rows": {
      COPY.id: {"seeds": {"0": _record(0.015)}},
      COPY.id + nm.STUDIES[0]: {"seeds": {"0": _record(study_value, steps=study_steps)}}}})
  return str(tmp_path)


@pytest.mark.parametrize("value, expected", [
    (0.009, "explains it"), (0.0146, "does not explain it")])
def test_the_initialisation_hypothesis_reads_the_study_rows_verdict(tmp_path, value, expected):
  pages_dir = _pages(tmp_path, value)
  table = rows.get("ncgru-t4")
  store = nm.load_store("ncgru-t4", pages_dir)
  recs = nm.records(store, COPY.id)
  text = nm.study(table, COPY, recs, nm.STUDIES[0], store, 0.1)
  sds = (value - 0.015) / (0.1 * 0.015 * math.sqrt(2))
  assert text.startswith(f"{value:.4g} ({value / PAPER:.3g} times the paper, "
                         f"{100 * (value / 0.015 - 1):+.0f} % against the preset's 0.015 "
                         f"({sds:+.1f} sd of the difference at the seed scatter)")
  assert "sd of the difference" not in nm.study(table, COPY, recs, nm.STUDIES[0], store)
  assert text.endswith(expected)


def test_a_partial_study_row_decides_nothing_and_the_page_has_every_row(tmp_path):
  pages_dir = _pages(tmp_path, 0.009, study_steps=5000)
  page = nm.page(pages_dir)
  copy = next(line for line in page.splitlines() if line.startswith(f"| {COPY.id} |"))
  assert copy.endswith("| partial (5000 of 10,000 steps): undecided | not run | not "
                       "applicable (the released code logs no loss of this row after an "
                       "update) | not applicable (not the denoise task) | not run | no study "
                       "row |")
  for _, row_id in nm.MISSES:
    assert f"| {row_id} |" in page
  assert "| denoise-ncgru-ucur-t400 | 0.00774 | — (0) | not run | not run | not measured |" \
      in page


def test_the_committed_page_is_what_the_archives_give():
  with open(nm.PAGE) as f:
    assert f.read() == nm.page(), "stale: run python -m experiments.ncgru_misses"


def test_the_summary_counts_each_hypothesis_findings():
  cell = lambda *found: ("r", "p", "o", "v", *found)  # noqa: E731
  cells = [cell("x: can explain", "x: rejected", "x: does not explain it", "no study row",
                "not applicable (z)", "not applicable (z)", "no study row", "no study row"),
           cell("x: rejected", "not measured", "y: explains it", "not run", "w: explains it",
                "v: does not explain it", "u: explains it", "t: does not explain it")]
  lines = nm.summary_lines(cells)
  assert lines[0] == "- H0: seeds: can explain 1 of the 2 rows, rejected on 1, open (not run, " \
      "partial or not measured) on 0."
  assert lines[1].endswith("can explain 0 of the 2 rows, rejected on 1, open (not run, partial "
                           "or not measured) on 1.")
  assert "can explain 1 of the 2 rows, rejected on 1," in lines[2]
  assert lines[3].endswith("rejected on 0, open (not run, partial or not measured) on 1, no "
                           "study row or not applicable for 1.")
  assert lines[4].endswith("can explain 1 of the 2 rows, rejected on 0, open (not run, partial "
                           "or not measured) on 0, no study row or not applicable for 1.")
  assert lines[6].startswith("- H6: released init and step: can explain 1 of the 2 rows, ")
  assert lines[7] == ("- H7: released code, two kernels: can explain 0 of the 2 rows, rejected "
                      "on 1, open (not run, partial or not measured) on 0, no study row or not "
                      "applicable for 1.")


def test_the_two_kernel_study_rows_are_the_two_kernel_rows_with_every_released_change():
  """H7's study rows exist for NC-GRU(U_c, U_r) rows alone (each of those of Tables 1, 2 and
  4 at T = 1000), each the preset with H6's overrides and the released two-kernel update."""
  studied = []
  for table_id, row_id in nm.MISSES:
    table = rows.get(table_id)
    ids = {r.id for r in table.rows}
    two_kernels = "ncgru-uc-" not in row_id
    if row_id + "-released-code" in ids:
      assert two_kernels, row_id
      studied.append(row_id)
      base, code = table.row(row_id), table.row(row_id + "-released-code")
      extra = {k: v for k, v in code.overrides.items() if base.overrides.get(k) != v}
      assert extra == {"model.cell.init_scheme": "released",
                       "model.cell.input_features": extra["model.cell.input_features"],
                       "optim.neumann_step": "sgd", "optim.two_kernel_update": "released"}
  assert studied == [r for _, r in nm.MISSES  # copy T = 2000 has no study rows
                     if "ncgru-uc-" not in r and not r.endswith("-t2000")]


DENOISE = rows.get("ncgru-t2").row("denoise-ncgru-uc-t400")


def _after(ratio, steps=400):
  return {"from_step": 9600, "steps": steps, "before": 0.0125, "after": 0.0125 * ratio,
          "ratio": ratio, "replay_error": 0.0}


@pytest.mark.parametrize("ratio, expected", [(0.96, "does not explain it"),
                                             (0.6, "explains it")])
def test_the_logged_loss_hypothesis_scales_every_seed_by_the_measured_ratio(ratio, expected):
  paper = DENOISE.paper["min_train_loss"]
  recs = [_record(0.012, "min_train_loss"), _record(0.014, "min_train_loss")]
  recs[0]["diagnostics"] = {"after_update": _after(ratio)}
  text = nm.h4_after_update(DENOISE, recs)
  assert f"is {ratio:.3f} times its loss before (mean over 1 seed(s), 400 steps" in text
  assert f"our minimum so read {0.013 * ratio:.4g} ({0.013 * ratio / paper:.3g} times" in text
  assert text.endswith(expected)
  assert nm.h4_after_update(DENOISE, [_record(0.012, "min_train_loss")]) == "not measured"
  assert nm.h4_after_update(COPY, recs).startswith("not applicable")


def test_the_lost_symbols_are_those_of_the_released_generator():
  """Against a simulation of the released generator: K positions drawn with replacement
  from N slots, the symbols written in order, so each repeated position keeps the last."""
  rng = np.random.default_rng(0)
  n, k, draws = 409, 10, 200000
  positions = rng.integers(0, n, size=(draws, k))
  lost = k - np.array([len(set(p)) for p in positions[:2000]])  # a loop as a cross-check
  kept = np.sort(positions, axis=1)
  distinct = 1 + (np.diff(kept, axis=1) != 0).sum(axis=1)
  assert (k - distinct[:2000] == lost).all()
  # the mean of 200,000 draws of a count of sd about 0.33: within 4 standard errors
  assert nm.lost_symbols(n, k) == pytest.approx((k - distinct).mean(), abs=4 * 0.33 / 447)
  assert nm.lost_symbols(n, 1) == pytest.approx(0.0, abs=1e-12)  # one draw loses nothing
  assert nm.lost_symbols(1, 3) == pytest.approx(2.0)  # one slot keeps one symbol


def test_the_data_hypothesis_bounds_the_loss_the_overwritten_symbols_add():
  text = nm.h5_released_data(DENOISE)
  added = nm.lost_symbols(409, 10) * math.log(9) / 420  # T = 400, K = 10, S = 9
  assert text.startswith(f"{nm.lost_symbols(409, 10):.3f} of the 10 symbols of a sequence")
  assert f"at least {added:.2g} added" in text
  assert f"({100 * added / DENOISE.paper['min_train_loss']:.1f} % of the paper's value" in text
  assert text.endswith("does not explain it")
  assert nm.h5_released_data(COPY) == "not applicable (not the denoise task)"
