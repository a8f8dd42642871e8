"""Verdicts of a row's per-seed records against the paper, as pure functions.

Every judged metric is compared as the mean over seeds, with a tolerance
(:func:`tolerance`): the larger of two standard errors over the seeds and
:data:`REL_TOL` of the paper's value (of its error rate, ``100 - accuracy``, for an
accuracy); one seed has the relative tolerance alone. The categories, in the order they are
decided (:data:`CATEGORIES` says each one in a sentence, as the index page prints it):

- ``not run``: no record;
- ``at floor``: some metric is no better than the task's floor
  (:mod:`experiments.reproduce.floors`) by more than its tolerance; ``at floor, as the
  paper`` when the paper's own value is also within that tolerance of the floor;
- ``partial``: fewer steps than the budget, or fewer seeds than the row plans;
- ``misses``: some metric is worse than the paper by more than its tolerance, or a seed's
  loss went non-finite;
- ``beats``: every metric better than the paper by more than its tolerance;
- ``meets``: the rest.

A computed quantity (:data:`EXACT`) meets when it rounds to the paper's printed digits and
misses otherwise.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence

import numpy as np

#: Relative tolerance of a comparison: of the paper's value (of its error rate for an
#: accuracy), and of the floor's value for the floor.
REL_TOL = 0.05
#: A loss better than the paper's by more than this factor needs a note on which setting
#: differs (``Row.differs``); the page flags the row without one.
FACTOR_FLAG = 10.0
LOWER_IS_BETTER = {"test_loss": True, "test_bpc": True, "test_ppl": True, "val_loss": True,
                   "min_train_loss": True, "test_accuracy": False,
                   "test_nll_per_sequence": True}
#: Computed quantities: ours meets the paper when it rounds to the paper's printed value
#: (three significant digits).
EXACT = {"fmc_total": 3}

NOT_RUN, AT_FLOOR, AT_FLOOR_AS_PAPER = "not run", "at floor", "at floor, as the paper"
PARTIAL, MISSES, BEATS, MEETS = "partial", "misses", "beats", "meets"
CATEGORIES = {
    MEETS: "the mean over seeds is no worse than the paper's value by more than the tolerance",
    BEATS: (f"the mean over seeds is better than the paper's value by more than the tolerance; "
            f"a loss better by more than {FACTOR_FLAG:g}x needs a note saying which setting "
            "differs, and the page flags the row without one"),
    MISSES: ("the mean over seeds is worse than the paper's value by more than the tolerance, "
             "or a seed's loss went non-finite"),
    PARTIAL: ("the runs stopped before the full budget, or fewer seeds ran than the row plans "
              "(never meets)"),
    AT_FLOOR: ("the mean over seeds is no better than the task's floor (a model without "
               "memory) by more than the tolerance (never meets); 'at floor, as the paper' "
               "when the paper's value is within the tolerance of the floor too"),
    NOT_RUN: "no per-seed record of the row exists",
}


@dataclasses.dataclass(frozen=True)
class Verdict:
  """A row's category and what the page says beside it.

  Attributes:
    category: one of :data:`CATEGORIES` (``'at floor, as the paper'`` counts as ``at floor``),
      or ``''`` for a row without a paper value (a stand-in).
    flag: a warning the page prints in bold (a loss more than 10x better without a note).
  """

  category: str
  flag: str = ""

  @property
  def counted(self) -> str:
    """The category the index counts."""
    return AT_FLOOR if self.category == AT_FLOOR_AS_PAPER else self.category


def better(metric: str, a: float, b: float) -> float:
  """How much ``a`` is better than ``b`` (positive: better) in ``metric``'s direction."""
  return b - a if LOWER_IS_BETTER.get(metric, True) else a - b


def tolerance(metric: str, values: Sequence[float], reference: float) -> float:
  """The tolerance of comparing ``values`` (one per seed) with ``reference``: the larger of
  two standard errors of their mean and :data:`REL_TOL` of ``reference`` (of ``100 -
  reference`` for an accuracy); the relative part alone for one value."""
  scale = 100.0 - reference if metric == "test_accuracy" else reference
  rel = REL_TOL * abs(scale)
  v = np.asarray(values, np.float64)
  if v.size < 2:
    return float(rel)
  return float(max(2.0 * v.std(ddof=1) / math.sqrt(v.size), rel))


def compare(metric: str, values: Sequence[float], paper: float) -> str:
  """``meets`` / ``beats`` / ``misses`` of one metric's per-seed ``values`` against
  ``paper``."""
  mean = float(np.mean(values))
  if metric in EXACT:
    digits = EXACT[metric]
    return MEETS if f"{mean:.{digits}g}" == f"{paper:.{digits}g}" else MISSES
  margin = better(metric, mean, paper)
  tol = tolerance(metric, values, paper)
  if margin < -tol:
    return MISSES
  return BEATS if margin > tol else MEETS


def at_floor(metric: str, values: Sequence[float], floor: float) -> bool:
  """Whether the mean of ``values`` is no better than ``floor`` by more than the tolerance
  (:func:`tolerance` relative to the floor)."""
  return better(metric, float(np.mean(values)), floor) <= tolerance(metric, values, floor)


def paper_at_floor(metric: str, paper: float, floor: float) -> bool:
  """Whether the paper's own value is within the relative tolerance of the floor."""
  return better(metric, paper, floor) <= tolerance(metric, [paper], floor)


def far_better(metric: str, values: Sequence[float], paper: float) -> bool:
  """Whether the mean loss is better than the paper's by more than :data:`FACTOR_FLAG`."""
  if not LOWER_IS_BETTER.get(metric, False) or metric in EXACT:
    return False
  mean = float(np.mean(values))
  return mean * FACTOR_FLAG < paper


def judge(paper: dict, records: list, *, floors: Optional[dict] = None,
          budget: Optional[int] = None, seeds: Optional[int] = None,
          differs: str = "") -> Verdict:
  """The verdict of a row from its per-seed records.

  Args:
    paper: ``{metric: value}`` of the paper (empty: a stand-in row, no verdict).
    records: the per-seed results (``metrics``, ``steps``, ``diverged_at``).
    floors: ``{metric: floor}`` (or ``{metric: (floor, what)}``) of the row's task.
    budget: the steps of the full budget (None: no budget to check).
    seeds: the number of seeds the row plans (None: any number is its budget).
    differs: the row's note on which setting differs from the paper.
  """
  if not paper:
    return Verdict("")
  if not records:
    return Verdict(NOT_RUN)
  finite = [r for r in records if not r.get("diverged_at")]
  values = {m: [r["metrics"][m] for r in finite if m in r.get("metrics", {})] for m in paper}
  floor_category = _floor_category(paper, values, floors or {})
  if floor_category:
    return Verdict(floor_category)
  if budget and any(int(r.get("steps") or 0) < int(budget) for r in records):
    return Verdict(PARTIAL)
  if seeds and len(records) < int(seeds):
    return Verdict(PARTIAL)
  if len(finite) < len(records) or any(not v for v in values.values()):
    return Verdict(MISSES)
  results = [compare(m, values[m], paper[m]) for m in paper]
  if MISSES in results:
    return Verdict(MISSES)
  flagged = [m for m in paper if far_better(m, values[m], paper[m])]
  flag = (f"better than the paper by more than {FACTOR_FLAG:g}x in {', '.join(flagged)} "
          "with no note on which setting differs") if flagged and not differs else ""
  return Verdict(BEATS if all(r == BEATS for r in results) else MEETS, flag)


def _floor_category(paper: dict, values: dict, floors: dict) -> str:
  for metric, floor in floors.items():
    floor = floor[0] if isinstance(floor, (tuple, list)) else floor
    if metric not in paper or not values.get(metric) or metric in EXACT:
      continue
    if at_floor(metric, values[metric], floor):
      return AT_FLOOR_AS_PAPER if paper_at_floor(metric, paper[metric], floor) else AT_FLOOR
  return ""
