"""Verdicts of a row's per-seed records against the paper, as pure functions.

Every judged metric is compared as the mean over seeds with a tolerance that depends on the
metric's kind (:func:`metric_kind`, :data:`TOLERANCES` says each kind's rule and why):

- log-likelihoods (NLL per frame, bits per character, log perplexity: a perplexity is
  compared through its logarithm): :data:`REL_TOL` of the paper's value;
- accuracies: :data:`REL_TOL` of the paper's error rate (``100 - accuracy``), at least
  :data:`ACCURACY_MIN` points;
- the small losses of the synthetic tasks: half a unit of the paper's last printed digit;
- computed quantities (:data:`EXACT`): equal at the paper's printed digits.

With several seeds the tolerance is the larger of two standard errors of the mean and the
kind's own, but never more than :data:`SPREAD_CAP` times the kind's own; a seed worse than the
paper by more than :data:`WORST_SEED` times the tolerance makes the row miss; every recorded
seed is judged, those beyond the row's plan too. The categories, in the order they are decided
(:data:`CATEGORIES` says each one in a sentence, as the index page prints it):

- ``not run``: no record;
- ``partial``: fewer steps than the paper's full budget, or fewer seeds than the row plans
  (:data:`AT_FLOOR_SO_FAR` beside it when the runs so far are at the floor: a model may still
  learn within its budget, so no run short of it is called at floor);
- ``at floor``: at the full budget, some metric is no better than the task's floor
  (:mod:`experiments.reproduce.floors`) by more than :data:`FLOOR_REL` of the floor, whatever
  the paper's value; ``at floor, as the paper`` when the paper's own value is within it too;
- ``misses``: some metric is worse than the paper by more than its tolerance, a seed by more
  than twice it, or a seed's loss went non-finite;
- ``unexplained``: a loss better than the paper's by more than :data:`FACTOR_FLAG` times
  without a recorded run that shows the setting which explains it (a run of that setting
  within :data:`FACTOR_FLAG` times of the paper's value);
- ``beats``: every metric better than the paper by more than its tolerance;
- ``meets``: the rest.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from typing import Optional, Sequence

import numpy as np

LOG_LIKELIHOOD, ACCURACY, PRINTED, COMPUTED = (
    "log-likelihood", "accuracy", "printed digits", "computed")
#: Relative tolerance of a log-likelihood (of its value) and of an accuracy (of its error
#: rate).
REL_TOL = {LOG_LIKELIHOOD: 0.015, ACCURACY: 0.05}
#: The least tolerance of an accuracy, in points: half the 0.1 % the tables print.
ACCURACY_MIN = 0.05
#: The most by which the seeds' spread may widen a tolerance (a multiple of the kind's own).
SPREAD_CAP = 2.0
#: A seed worse than the paper by more than this multiple of the tolerance: the row misses.
WORST_SEED = 2.0
#: Relative tolerance against the floor (of the floor's value; of its error rate for an
#: accuracy): a result this close to what a model without memory scores learned nothing.
FLOOR_REL = 0.05
#: A loss better than the paper's by more than this factor is ``unexplained`` unless a
#: recorded run shows the setting that explains it (``Row.explained_by``).
FACTOR_FLAG = 10.0
LOWER_IS_BETTER = {"test_loss": True, "test_bpc": True, "test_ppl": True, "val_loss": True,
                   "min_train_loss": True, "test_accuracy": False,
                   "test_nll_per_sequence": True, "fmc_total": False}
#: Computed quantities: ours meets the paper when it rounds to the paper's printed value
#: (three significant digits).
EXACT = {"fmc_total": 3}
#: Tasks whose losses are log-likelihoods (NLL per frame, cross entropy per token).
LOG_LIKELIHOOD_TASKS = ("jsb", "musedata", "nottingham", "piano_midi", "ptb_char", "ptb_word")

TOLERANCES = {
    LOG_LIKELIHOOD: (
        f"{100 * REL_TOL[LOG_LIKELIHOOD]:g} % of the paper's value (a perplexity through its "
        "logarithm): narrower than the gap between the best method and the next in the "
        "lvfRNN paper's log-likelihood columns where it claims a lead (JSB 8.36 against 8.53, "
        "2.0 %; PTB-char 1.43 against 1.47 BPC, 2.8 %), so a tolerance cannot merge the rows "
        "a claim separates"),
    ACCURACY: (
        f"{100 * REL_TOL[ACCURACY]:g} % of the paper's error rate (100 − accuracy), at least "
        f"{ACCURACY_MIN:g} points (half the 0.1 % the tables print): the error rate is "
        "what the methods differ by (98.0 % against 97.3 % is 2.0 against 2.7 % of errors)"),
    PRINTED: (
        "half a unit of the paper's last printed digit: the synthetic tasks' small losses "
        "are printed with one to three significant digits (2.1e-2, 3e-4, 0.149e-3), and a "
        "value within that rounding is all a table can say"),
    COMPUTED: "equal when rounded to the paper's printed digits (three significant digits)",
}

NOT_RUN, AT_FLOOR, AT_FLOOR_AS_PAPER = "not run", "at floor", "at floor, as the paper"
PARTIAL, MISSES, BEATS, MEETS = "partial", "misses", "beats", "meets"
AT_FLOOR_SO_FAR = "at floor so far"
UNEXPLAINED = "unexplained"
CATEGORIES = {
    MEETS: "the mean over seeds is no worse than the paper's value by more than the tolerance",
    BEATS: "the mean over seeds is better than the paper's value by more than the tolerance",
    UNEXPLAINED: (f"a loss better than the paper's by more than {FACTOR_FLAG:g}x, and no "
                  "recorded run shows the setting that explains it: the same model in that "
                  f"setting, at its full budget, within {FACTOR_FLAG:g}x of the paper's value "
                  "(never meets or beats)"),
    MISSES: ("the mean over seeds is worse than the paper's value by more than the tolerance, "
             f"a seed is worse by more than {WORST_SEED:g}x the tolerance, or a seed's loss "
             "went non-finite"),
    PARTIAL: ("the runs stopped before the paper's full budget, or fewer seeds ran than the "
              "row plans (never meets, never at floor: a model may learn late); "
              f"'partial ({AT_FLOOR_SO_FAR})' when the runs so far are within the floor's "
              "tolerance"),
    AT_FLOOR: ("at the full budget, the mean over seeds is no better than the task's floor "
               f"(a model without memory) by more than {100 * FLOOR_REL:g} % (never meets), "
               "whatever the paper's value; 'at floor, as the paper' when the paper's value is "
               "within it too"),
    NOT_RUN: "no per-seed record of the row exists",
}


@dataclasses.dataclass(frozen=True)
class Verdict:
  """A row's category and what the page says beside it.

  Attributes:
    category: one of :data:`CATEGORIES` (``'at floor, as the paper'`` counts as ``at floor``),
      or ``''`` for a row without a paper value (a stand-in).
    flag: a warning the page prints in bold (the metrics of an ``unexplained`` row).
    seeds: ``'k of n seeds'`` within the tolerance or better, where the seeds fall on both
      sides of it; empty otherwise.
    so_far: :data:`AT_FLOOR_SO_FAR` for a ``partial`` row whose runs so far are at its floor;
      empty otherwise.
  """

  category: str
  flag: str = ""
  seeds: str = ""
  so_far: str = ""

  @property
  def counted(self) -> str:
    """The category the index counts."""
    return AT_FLOOR if self.category == AT_FLOOR_AS_PAPER else self.category


def metric_kind(metric: str, task: str = "") -> str:
  """The kind of ``metric`` on ``task`` (the task name of the row's config), which sets its
  tolerance (:data:`TOLERANCES`)."""
  if metric in EXACT:
    return COMPUTED
  if metric == "test_accuracy":
    return ACCURACY
  if metric in ("test_bpc", "test_ppl", "test_nll_per_sequence") or task in LOG_LIKELIHOOD_TASKS:
    return LOG_LIKELIHOOD
  return PRINTED


def compared(metric: str, value: float) -> float:
  """The quantity a verdict compares: a perplexity's logarithm, else the value itself."""
  return math.log(value) if metric == "test_ppl" else float(value)


def better(metric: str, a: float, b: float) -> float:
  """How much ``a`` is better than ``b`` (positive: better) in ``metric``'s direction."""
  return b - a if LOWER_IS_BETTER.get(metric, True) else a - b


def half_unit(value: float) -> float:
  """Half a unit of the last digit of ``value`` as printed (``0.021`` -> ``0.0005``)."""
  exponent = decimal.Decimal(f"{value:.12g}").normalize().as_tuple().exponent
  return 0.5 * 10.0 ** min(int(exponent), 0) if value else 0.0


def relative_tolerance(metric: str, reference: float, kind: str) -> float:
  """The tolerance of ``kind`` (:data:`TOLERANCES`) around ``reference``, in the units of
  :func:`compared`."""
  if kind == ACCURACY:
    return max(REL_TOL[ACCURACY] * abs(100.0 - reference), ACCURACY_MIN)
  if kind == LOG_LIKELIHOOD:
    return REL_TOL[LOG_LIKELIHOOD] * abs(compared(metric, reference))
  if kind == PRINTED:
    return half_unit(reference)
  digits = EXACT.get(metric, 3)  # a computed quantity: half a unit of its printed digits
  return 0.5 * 10.0 ** (math.floor(math.log10(abs(reference))) - digits + 1) if reference else 0.0


def spread(metric: str, values: Sequence[float]) -> float:
  """Two standard errors of the mean of ``values`` (in the units of :func:`compared`); 0 for
  fewer than two."""
  v = np.asarray([compared(metric, x) for x in values], np.float64)
  return float(2.0 * v.std(ddof=1) / math.sqrt(v.size)) if v.size >= 2 else 0.0


def tolerance(metric: str, values: Sequence[float], reference: float,
              kind: Optional[str] = None) -> float:
  """The tolerance of comparing ``values`` (one per seed) with ``reference``: the larger of
  their two standard errors and the kind's own (``kind``: :func:`metric_kind` of ``metric``
  on no task), at most :data:`SPREAD_CAP` times the kind's own."""
  kind = kind or metric_kind(metric)
  own = relative_tolerance(metric, reference, kind)
  return float(min(max(spread(metric, values), own), SPREAD_CAP * own))


def compare(metric: str, values: Sequence[float], paper: float,
            kind: Optional[str] = None) -> str:
  """``meets`` / ``beats`` / ``misses`` of one metric's per-seed ``values`` against
  ``paper`` (``kind``: :func:`metric_kind` of ``metric`` on no task)."""
  kind = kind or metric_kind(metric)
  mean = float(np.mean([compared(metric, v) for v in values]))
  reference = compared(metric, paper)
  if kind == COMPUTED:
    digits = EXACT[metric]
    return MEETS if f"{mean:.{digits}g}" == f"{paper:.{digits}g}" else MISSES
  tol = tolerance(metric, values, paper, kind)
  margin = better(metric, mean, reference)
  worst = min(better(metric, compared(metric, v), reference) for v in values)
  if margin < -tol or worst < -WORST_SEED * tol:
    return MISSES
  return BEATS if margin > tol else MEETS


def seeds_within(metric: str, values: Sequence[float], paper: float, kind: str) -> int:
  """How many seeds are no worse than ``paper`` by more than the kind's own tolerance."""
  if kind == COMPUTED:
    return len(values)
  own = relative_tolerance(metric, paper, kind)
  reference = compared(metric, paper)
  return sum(better(metric, compared(metric, v), reference) >= -own for v in values)


def at_floor(metric: str, values: Sequence[float], floor: float) -> bool:
  """Whether the mean of ``values`` is no better than ``floor`` by more than
  :data:`FLOOR_REL` of it (of its error rate for an accuracy), the seeds' two standard
  errors widening that at most to :data:`SPREAD_CAP` times."""
  scale = 100.0 - floor if metric == "test_accuracy" else compared(metric, floor)
  own = FLOOR_REL * abs(scale)
  tol = min(max(spread(metric, values), own), SPREAD_CAP * own)
  mean = float(np.mean([compared(metric, v) for v in values]))
  return better(metric, mean, compared(metric, floor)) <= tol


def paper_at_floor(metric: str, paper: float, floor: float) -> bool:
  """Whether the paper's own value is within the floor's tolerance of the floor."""
  return at_floor(metric, [paper], floor)


def far_better(metric: str, values: Sequence[float], paper: float) -> bool:
  """Whether the mean loss is better than the paper's by more than :data:`FACTOR_FLAG`."""
  if not LOWER_IS_BETTER.get(metric, False) or metric in EXACT:
    return False
  return float(np.mean(values)) * FACTOR_FLAG < paper


def finite_values(records: list, metric: str) -> tuple:
  """The values of ``metric`` in the records of the seeds that did not diverge."""
  return tuple(r["metrics"][metric] for r in records
               if not r.get("diverged_at") and metric in r.get("metrics", {}))


def short_of_budget(records: list, budget: Optional[int], seeds: Optional[int]) -> bool:
  """Whether ``records`` stop short of the full budget: a record under ``budget`` steps, or
  fewer records than the ``seeds`` planned (None: that part of the budget is not checked)."""
  if budget and any(int(r.get("steps") or 0) < int(budget) for r in records):
    return True
  return bool(seeds) and len(records) < int(seeds)


def judge(paper: dict, records: list, *, floors: Optional[dict] = None,
          budget: Optional[int] = None, seeds: Optional[int] = None, task: str = "",
          explained: bool = False) -> Verdict:
  """The verdict of a row from its per-seed records.

  Args:
    paper: ``{metric: value}`` of the paper (empty: a stand-in row, no verdict).
    records: the per-seed results (``metrics``, ``steps``, ``diverged_at``); every one is
      judged, seeds beyond the row's plan too.
    floors: ``{metric: floor}`` (or ``{metric: (floor, what)}``) of the row's task.
    budget: the steps of the paper's full budget (None: a computed row).
    seeds: the number of seeds the row plans (None: any number is its budget).
    task: the task name of the row's config (it sets the metrics' kinds, :func:`metric_kind`).
    explained: whether a recorded run shows the setting that explains a loss more than
      :data:`FACTOR_FLAG` times better than the paper's.
  """
  if not paper:
    return Verdict("")
  if not records:
    return Verdict(NOT_RUN)
  finite = [r for r in records if not r.get("diverged_at")]
  values = {m: list(finite_values(records, m)) for m in paper}
  floor_category = _floor_category(paper, values, floors or {})
  if short_of_budget(records, budget, seeds):
    return Verdict(PARTIAL, so_far=AT_FLOOR_SO_FAR if floor_category else "")
  if floor_category:
    return Verdict(floor_category)
  if len(finite) < len(records) or any(not v for v in values.values()):
    return Verdict(MISSES)
  return _compared_verdict(paper, values, task, explained)


def _compared_verdict(paper: dict, values: dict, task: str, explained: bool) -> Verdict:
  """The verdict of a complete row from its metrics' per-seed ``values``."""
  kinds = {m: metric_kind(m, task) for m in paper}
  results = [compare(m, values[m], paper[m], kinds[m]) for m in paper]
  within = [(seeds_within(m, values[m], paper[m], kinds[m]), len(values[m])) for m in paper]
  split = [f"{k} of {n} seeds" for k, n in within if 0 < k < n]
  seeds_note = (", ".join(split) + " within the tolerance or better") if split else ""
  if MISSES in results:
    return Verdict(MISSES, seeds=seeds_note)
  flagged = [m for m in paper if far_better(m, values[m], paper[m])]
  if flagged and not explained:
    return Verdict(UNEXPLAINED, f"better than the paper by more than {FACTOR_FLAG:g}x in "
                   f"{', '.join(flagged)}, and no recorded run shows why", seeds_note)
  return Verdict(BEATS if all(r == BEATS for r in results) else MEETS, seeds=seeds_note)


def floored(values: dict, floors: dict) -> Optional[tuple]:
  """The first ``(metric, floor)`` of ``floors`` (``{metric: floor}`` or ``{metric: (floor,
  what)}``) whose per-seed ``values[metric]`` are at it (:func:`at_floor`), else None; a
  metric of :data:`EXACT` or without values is never at its floor."""
  for metric, floor in floors.items():
    floor = floor[0] if isinstance(floor, (tuple, list)) else floor
    if values.get(metric) and metric not in EXACT and at_floor(metric, values[metric], floor):
      return metric, floor
  return None


def _floor_category(paper: dict, values: dict, floors: dict) -> str:
  hit = floored(values, {m: f for m, f in floors.items() if m in paper})
  if hit is None:
    return ""
  metric, floor = hit
  return AT_FLOOR_AS_PAPER if paper_at_floor(metric, paper[metric], floor) else AT_FLOOR
