"""The papers' claims about their tables, as comparisons between rows, and their verdicts.

A paper's table is a means to a claim ("lvfRNN obtains significantly better test loss than
all other methods on JSB and MuseData"): absolute values may differ for reasons a paper does
not print (evaluation conventions, data versions), while the order of the methods under one
protocol is what it asserts. A :class:`Claim` is such a sentence written as a comparison: every
row of ``better`` is better than every row of ``than`` in ``metric`` (``kind='better'``),
every pair is within the tolerance of each other (``kind='comparable'``), or no row of
``better`` is worse than a row of ``than`` by more than it (``kind='not_worse'``: "does not
degrade").

:func:`judge_claim` decides it from the rows' per-seed records, pair by pair:

- ``undecided`` when a row of the pair has no record, or stopped short of its full budget
  (a partial row: the comparison would not be at equal budgets), or when the two means are
  within their separation (:func:`separation`) of each other (for ``comparable`` and
  ``not_worse``: apart by more than the tolerance only within the scatter a one-seed row
  borrows);
- ``contradicted`` when some pair is in the other order by more than its separation (for
  ``comparable``: apart by more than it);
- ``supported`` when every pair is in the claimed order by more than its separation (for
  ``comparable``: within it).

The separation is the larger of the two rows' combined two standard errors and the relative
tolerance of the metric's kind at the worse row's value
(:func:`experiments.reproduce.verdict.relative_tolerance`; for the synthetic tasks' small
losses, the relative precision of the worse row's printed paper value): the kind's
tolerance is what a table can resolve. One seed has no spread of its own: a one-seed row
stands at the seed scatter measured where several seeds ran (:func:`scatter_for`: the
median relative standard deviation of the complete rows of its task and metric with two or
more seeds, or, for a synthetic task's minimum loss, of every such row of that kind), its
standard error that scatter times its value; without a measurement it adds no spread.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from experiments.reproduce import verdict as verdict_lib

SUPPORTED, CONTRADICTED, UNDECIDED = "supported", "contradicted", "undecided"
KINDS = ("better", "comparable", "not_worse")
STATUSES = {
    SUPPORTED: "every pair of rows is in the claimed order (or, for a claim of comparable "
               "rows, within the tolerance) by more than their separation",
    CONTRADICTED: "some pair of rows is in the other order (or apart) by more than their "
                  "separation",
    UNDECIDED: "a row is not run or partial (not at the paper's full budget), or a pair is "
               "within its separation (for a claim of comparable rows: apart by more than the "
               "tolerance, but within the scatter a one-seed row borrows)",
}


@dataclasses.dataclass(frozen=True)
class Claim:
  """A claim of a paper about its table, as a comparison between rows.

  Attributes:
    text: the comparison in words (``'lvfRNN < every other model, JSB test NLL'``; ``<``
      means better in the metric's direction).
    quote: the paper's sentence it comes from, verbatim.
    metric: the key of the rows' ``paper`` values it compares.
    better: ids of the rows claimed better (each better than every row of ``than``).
    than: ids of the rows claimed worse.
    kind: ``'better'``, ``'comparable'`` (every pair within the tolerance) or
      ``'not_worse'`` (no pair worse by more than it).
    section: where the sentence stands in the paper.
    printed_holds: whether the paper's own printed values satisfy the claim (False: its
      table already contradicts its sentence, and the page says so).
    remark: what a reader must know (which of several rows stands for a cell).
  """

  text: str
  quote: str
  metric: str
  better: tuple
  than: tuple
  kind: str = "better"
  section: str = ""
  printed_holds: bool = True
  remark: str = ""

  def check(self, table) -> None:
    """Raises ValueError unless every named row is in ``table`` with a paper value of
    ``metric`` and ``kind`` is known."""
    if self.kind not in KINDS:
      raise ValueError(f"claim {self.text!r}: kind must be one of {KINDS}; got {self.kind!r}.")
    if not self.better or not self.than or not self.quote:
      raise ValueError(f"claim {self.text!r}: needs rows on both sides and the paper's quote.")
    ids = {r.id: r for r in table.rows}
    for row_id in self.better + self.than:
      if row_id not in ids or self.metric not in ids[row_id].paper:
        raise ValueError(f"claim {self.text!r} of table {table.id}: row {row_id!r} is not a "
                         f"row of the table with a paper value of {self.metric!r}.")


@dataclasses.dataclass(frozen=True)
class Side:
  """What a claim needs of one row: its per-seed values of the claim's metric, whether the
  row is complete (every seed at the full budget, as many seeds as planned), its task, the
  paper's value of the metric and the relative seed scatter (:func:`scatter_for`) that stands
  for its spread when it has one seed (NaN: none measured)."""

  values: tuple
  complete: bool
  task: str = ""
  paper: float = math.nan
  scatter: float = math.nan


@dataclasses.dataclass(frozen=True)
class ClaimVerdict:
  """A claim's status and why, in words for the page."""

  status: str
  why: str


def relative_std(metric: str, values) -> float:
  """The sample standard deviation of ``values`` (two or more seeds) over the magnitude of
  their mean, in the units of :func:`experiments.reproduce.verdict.compared`."""
  v = np.asarray([verdict_lib.compared(metric, x) for x in values], np.float64)
  if v.size < 2:
    raise ValueError(f"relative_std needs two or more values; got {v.size}.")
  return float(v.std(ddof=1) / abs(v.mean()))


def scatter_for(measured: dict, task: str, metric: str) -> float:
  """The relative seed scatter a one-seed row of ``task`` stands at in ``metric``: the
  median of ``measured[(task, metric)]`` (the :func:`relative_std` of every complete row of
  that task and metric with two or more seeds); for a synthetic task's minimum loss (the
  printed-digits kind, whose tolerance is only the paper's printed precision) without one,
  the median over every task's rows of that kind; NaN where nothing is measured (a computed
  metric never scatters)."""
  kind = verdict_lib.metric_kind(metric, task)
  if kind == verdict_lib.COMPUTED:
    return math.nan
  samples = measured.get((task, metric), ())
  if samples:
    return float(np.median(samples))
  return pooled_scatter(measured) if kind == verdict_lib.PRINTED else math.nan


def pooled_scatter(measured: dict) -> float:
  """The median of ``measured`` over every task's minimum losses (the printed-digits kind
  of :func:`experiments.reproduce.verdict.metric_kind`); NaN without one."""
  samples = [x for (t, m), xs in measured.items()
             if verdict_lib.metric_kind(m, t) == verdict_lib.PRINTED for x in xs]
  return float(np.median(samples)) if samples else math.nan


def side_spread(metric: str, side: Side, borrowed: bool = True) -> float:
  """Two standard errors of ``side``'s mean: its seeds' own, or for one seed (with
  ``borrowed``) its measured scatter times its value; 0 without either."""
  if len(side.values) >= 2:
    return verdict_lib.spread(metric, side.values)
  if borrowed and math.isfinite(side.scatter):
    return 2.0 * side.scatter * abs(verdict_lib.compared(metric, side.values[0]))
  return 0.0


def separation(metric: str, a: Side, b: Side, borrowed: bool = True) -> float:
  """How far apart the means of ``a`` and ``b`` must be to order them (in the units of
  :func:`experiments.reproduce.verdict.compared`); without ``borrowed``, a one-seed row adds
  no spread (:func:`side_spread`)."""
  spread = math.hypot(side_spread(metric, a, borrowed), side_spread(metric, b, borrowed))
  worse = min((a, b), key=lambda s: verdict_lib.better(metric, float(np.mean(s.values)), 0.0))
  ours = float(np.mean(worse.values))
  kind = verdict_lib.metric_kind(metric, a.task)
  if kind == verdict_lib.PRINTED:  # the paper's printed precision, relative, at our value
    own = verdict_lib.half_unit(worse.paper) / abs(worse.paper) * abs(ours)
  else:
    own = verdict_lib.relative_tolerance(metric, ours, kind)
  return max(spread, own)


def _status(kind: str, gap: float, sep: float, narrow: float) -> str:
  """The status of a pair ``gap`` apart (positive: in the claimed order) for a claim of
  ``kind``, given its separation ``sep`` and ``narrow``, the separation without a one-seed
  row's borrowed scatter: a borrowed scatter can only leave a pair undecided, never decide
  it."""
  if kind == "comparable":
    return SUPPORTED if abs(gap) <= narrow else CONTRADICTED if abs(gap) > sep else UNDECIDED
  if kind == "not_worse":
    return SUPPORTED if gap >= -narrow else CONTRADICTED if gap < -sep else UNDECIDED
  if abs(gap) <= sep:
    return UNDECIDED
  return SUPPORTED if gap > 0 else CONTRADICTED


def _missing(side: Optional[Side]) -> str:
  """Why ``side`` cannot decide a pair: the row verdict's ``NOT_RUN`` or ``PARTIAL``, or
  ``''`` when it can."""
  if side is None or not side.values:
    return verdict_lib.NOT_RUN
  return "" if side.complete else verdict_lib.PARTIAL


def _pair(claim: Claim, a_id: str, b_id: str, sides: dict) -> tuple[str, tuple[str, ...]]:
  """The status of one pair of a claim and what decided it (every row that leaves it
  undecided for want of a full-budget record, or the comparison)."""
  a, b = sides.get(a_id), sides.get(b_id)
  missing = [f"{row_id} {why}" for row_id, why in ((a_id, _missing(a)), (b_id, _missing(b)))
             if why]
  if missing:
    return UNDECIDED, tuple(missing)
  metric = claim.metric
  mean_a = float(np.mean([verdict_lib.compared(metric, v) for v in a.values]))
  mean_b = float(np.mean([verdict_lib.compared(metric, v) for v in b.values]))
  gap = verdict_lib.better(metric, mean_a, mean_b)
  sep = separation(metric, a, b)
  said = f"{a_id} {'better' if gap > 0 else 'worse'} than {b_id} by {abs(gap):.3g} ({sep:.3g}"
  borrowed = sorted({s.scatter for s in (a, b) if len(s.values) == 1 and math.isfinite(s.scatter)})
  said += "".join(f"; one seed at the measured scatter {100 * x:.2g} %" for x in borrowed) + ")"
  return _status(claim.kind, gap, sep, separation(metric, a, b, borrowed=False)), (said,)


def judge_claim(claim: Claim, sides: dict) -> ClaimVerdict:
  """The verdict of ``claim`` from ``{row_id: Side}`` (a missing row: not run)."""
  results = [_pair(claim, a, b, sides) for a in claim.better for b in claim.than]
  for status in (CONTRADICTED, UNDECIDED):
    found = [part for s, why in results if s == status for part in why]
    if found:
      return ClaimVerdict(status, _listed(found))
  return ClaimVerdict(SUPPORTED, _listed([part for _, why in results for part in why]))


def _listed(parts: list, most: int = 4) -> str:
  """At most ``most`` of ``parts`` joined, with how many more there are."""
  unique = list(dict.fromkeys(parts))
  more = len(unique) - most
  return "; ".join(unique[:most]) + (f"; and {more} more" if more > 0 else "")


def side_of(records: list, *, metric: str, complete: bool, task: str = "",
            paper: float = math.nan, scatter: float = math.nan) -> Optional[Side]:
  """The :class:`Side` of a row from its records (the finite seeds' ``metric``); None
  without a value."""
  values = verdict_lib.finite_values(records, metric)
  return Side(values, complete, task, paper, scatter) if values else None
