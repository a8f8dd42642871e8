"""The rows of the papers' experiment tables, as data.

Every numeric cell of the four source papers' experiment tables is a :class:`Row`: which
paper and table it comes from, the task and model as the paper names them, the paper's
values, the config that runs it here and the budget. ``experiments/reproduce/tables/``
holds one module per paper, each with a ``TABLES`` dict ``{table_id: Table}``;
:func:`tables` collects them.

Metric names (keys of ``Row.paper``) and where the harness reads ours:

=========================  ==================================================================
``test_loss``              test loss at the best validation step (cross entropy, MSE, NLL)
``test_accuracy``          test accuracy at the best validation step, in percent
``test_bpc``               test loss at the best validation step divided by ln 2
``test_ppl``               exp of the test loss at the best validation step
``val_loss``               the best validation loss
``min_train_loss``         the smallest training loss logged during training (NC-GRU's tables
                           report the minimum attained loss)
``test_nll_per_sequence``  music: the test NLL per frame of each piece, averaged over the
                           pieces (``test_loss`` averages over frames), at the best
                           validation step
``fmc_total``              an analytic quantity, not a training run: the total Fisher memory
                           ``J_tot`` of nnRNN Table 6 (:mod:`experiments.reproduce.analytic`),
                           compared at the paper's printed precision
=========================  ==================================================================

A value in ``Row.paper`` is in the paper's own unit *after* removing the table's scale:
NC-GRU's "loss x 1e-3 = 0.149" is stored as ``0.149e-3``; accuracies are percents.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from typing import Any, Optional

METRICS = ("test_loss", "test_accuracy", "test_bpc", "test_ppl", "val_loss", "min_train_loss",
           "test_nll_per_sequence", "fmc_total")


# A duration ("2.3 s", "about 9 h", "10 min"): a measured result, which a row's note or
# blocker must not state (the page shows each record's own wall time).
_DURATION = re.compile(
    r"\d[\d.,]*(?:\s?-\s?\d[\d.,]*)?\s?(?:ms|s|sec|seconds?|min|minutes?|h|hours?|days?)\b",
    re.IGNORECASE)


def stated_durations(text: str) -> list[str]:
  """The durations written in ``text`` (``'2.3 s'``, ``'8 h'``, ``'2.5-3 min'``)."""
  return _DURATION.findall(text or "")


@dataclasses.dataclass(frozen=True)
class Row:
  """One row of a paper's table.

  Attributes:
    id: short slug unique within its table, e.g. ``'copy-lvf'``.
    task: the task as the paper's table states it, e.g. ``'copy T=200'``.
    model: the model as the paper names it, e.g. ``'lvfRNN'``, ``'NC-GRU(U_c)'``.
    paper: ``{metric: value}`` of the paper (keys from :data:`METRICS`); empty for a
      stand-in row (a dataset the paper did not use, run with the table's models and
      settings: its page shows the validation and test loss without a verdict).
    config: ``'<file>.py:<preset>'`` under ``configs/`` that runs it, or None when no
      config can (then ``blocker`` says why).
    overrides: dotted config fields set on top of the preset (``{'train.steps': 20000}``);
      the preset should already be right, overrides are for the table-specific
      settings a preset cannot know (sequence length of this column, ...).
    paper_params: the parameter count the paper gives (text as printed: ``'11k'``).
    steps: the full training budget in optimiser steps: the paper's, or where the paper
      gives none, the preset's (the row's note or its table's docstring says which); every
      row with a config states it, and a run of fewer steps is ``partial``.
    run_steps: the steps run here when smaller than ``steps`` (a reduced budget; the
      page states the fraction and the verdict is ``partial``), None to run ``steps``.
    seeds: how many seeds to run here (mean +- std over them).
    blocker: why this row cannot run here (``'no data: TIMIT is licensed (LDC)'``,
      ``'budget: a GPU row (50 epochs at batch 128)'``); None when it runs. A row blocked
      by its budget (the text starts with ``'budget'``) still runs when asked to
      (``--include-blocked``, and in a smoke run).
    note: a deviation or a choice where the paper is silent, said in one sentence; it
      states settings, never measured results (those are run notes stored beside the
      records, :mod:`experiments.reproduce.archive`).
    differs: which setting differs from the paper's, for a row whose loss is more than 10x
      better than the paper's (shown on the page; it explains nothing by itself).
    explained_by: ``'<table>/<row>'`` of each recorded row that tests a setting which might
      explain a loss more than 10x better than the paper's (e.g. the same model at the
      paper's setting), one setting a row; unless the records of one of them land within
      10x of the paper's value (:func:`experiments.reproduce.runner.explaining_rows`) such
      a row is ``unexplained``.
    analytic: for a cell that is a computed quantity rather than a training run, the name
      of the function of :mod:`experiments.reproduce.analytic` that computes its metrics
      (called with ``analytic_args``); ``config`` is then None.
    analytic_args: keyword arguments of ``analytic``.
    runs_of: ``'<table>/<row>'`` of another row whose runs this row reads, for a cell that
      reports another metric (or another printed value) of the same trained models, e.g.
      nnRNN Table 4's accuracies of Table 1's model states. The row keeps its own config
      and budget, which must equal the other row's (:func:`source`); running it runs (or
      finds) the other row's seeds in that row's directory.
    diagnostics: ``{name: keyword arguments}`` of the measurements of
      :mod:`experiments.reproduce.diagnostics` that the runner adds to each seed's record
      after training (``record["diagnostics"][name]``), e.g. how far a gradient reaches
      back through the trained recurrence; empty for none.
  """

  id: str
  task: str
  model: str
  paper: dict
  config: Optional[str] = None
  overrides: dict = dataclasses.field(default_factory=dict)
  paper_params: Optional[str] = None
  steps: Optional[int] = None
  run_steps: Optional[int] = None
  seeds: int = 1
  blocker: Optional[str] = None
  note: str = ""
  differs: str = ""
  explained_by: tuple[str, ...] = ()
  analytic: Optional[str] = None
  analytic_args: dict = dataclasses.field(default_factory=dict)
  runs_of: Optional[str] = None
  diagnostics: dict = dataclasses.field(default_factory=dict)

  @property
  def budget_blocked(self) -> bool:
    """Whether only its budget keeps the row from running here (a GPU row)."""
    return self.blocker is not None and self.blocker.startswith("budget")

  def __post_init__(self):
    unknown = sorted(set(self.paper) - set(METRICS))
    if unknown:
      raise ValueError(f"Row {self.id!r}: unknown metric(s) {unknown}; allowed {METRICS}.")
    if self.config is None and self.blocker is None and self.analytic is None:
      raise ValueError(f"Row {self.id!r}: a row without a config needs a blocker.")
    if self.config is not None and self.analytic is None and not self.steps:
      raise ValueError(f"Row {self.id!r}: a row with a config states its full budget "
                       "(steps: the paper's, or the preset's where the paper gives none).")
    if not isinstance(self.explained_by, tuple) or any(
        not isinstance(n, str) or n.count("/") != 1 for n in self.explained_by):
      raise ValueError(f"Row {self.id!r}: explained_by must be a tuple of '<table>/<row>'; "
                       f"got {self.explained_by!r}.")
    if self.seeds < 1:
      raise ValueError(f"Row {self.id!r}: seeds must be >= 1; got {self.seeds}.")
    for field in ("note", "blocker", "differs"):
      found = stated_durations(getattr(self, field))
      if found:
        raise ValueError(f"Row {self.id!r}: argument {field!r} states the duration(s) "
                         f"{found}; a row states settings only (a run's time is in its "
                         "record, on the page).")
    if self.runs_of is not None and (self.runs_of.count("/") != 1 or self.config is None):
      raise ValueError(f"Row {self.id!r}: runs_of must be '<table>/<row>' and the row needs "
                       f"the config of those runs; got runs_of={self.runs_of!r}, "
                       f"config={self.config!r}.")


@dataclasses.dataclass(frozen=True)
class Table:
  """A table of a paper: ``paper`` (slug: ``'lvf'``, ``'ncgru'``, ``'nnrnn'``,
  ``'antisymmetric'``), ``number`` (``'4'``), ``caption`` (the paper's, shortened),
  ``citation`` (author year, arXiv id), its rows and the ``claims`` its paper makes about
  them (:class:`experiments.reproduce.claims.Claim`).

  A table of this repository's own study (``study``: its id, e.g. ``'long-memory-copy'``)
  has no paper: ``paper`` names the study, ``number`` is empty, ``citation`` says what it
  measures, and its rows have no paper values (their verdicts are the floor's alone,
  :func:`experiments.reproduce.runner.judge_row`).
  """

  paper: str
  number: str
  caption: str
  citation: str
  rows: tuple
  study: str = ""
  claims: tuple = ()

  @property
  def id(self) -> str:
    return self.study or f"{self.paper}-t{self.number}"

  @property
  def heading(self) -> str:
    """The title of the table's page: the paper and table number, or the study's
    citation."""
    return self.citation if self.study else f"{self.citation}, Table {self.number}"

  def row(self, row_id: str) -> Row:
    for r in self.rows:
      if r.id == row_id:
        return r
    raise ValueError(f"table {self.id}: unknown row {row_id!r}; rows are "
                     f"{[r.id for r in self.rows]}.")


def sentence(*parts: Optional[str], end: str = ".") -> str:
  """A row note from ``parts``: the non-empty ones joined by semicolons, capitalised, ending
  with ``end``."""
  text = "; ".join(p for p in parts if p)
  return text[:1].upper() + text[1:] + end


def tables(studies: bool = False) -> dict[str, Table]:
  """Every table of every paper module in ``tables/``, keyed by ``Table.id``; with
  ``studies``, the tables of this repository's own studies too (``Table.study``)."""
  from experiments.reproduce import tables as pkg  # pylint: disable=g-import-not-at-top
  out: dict[str, Table] = {}
  for info in pkgutil.iter_modules(pkg.__path__):
    mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
    for t in getattr(mod, "TABLES", {}).values():
      if t.study and not studies:
        continue
      if t.id in out:
        raise ValueError(f"duplicate table id {t.id!r} in {info.name}")
      ids = [r.id for r in t.rows]
      if len(ids) != len(set(ids)):
        raise ValueError(f"table {t.id}: duplicate row ids")
      for claim in t.claims:
        claim.check(t)
      out[t.id] = t
  return dict(sorted(out.items()))


def get(table_id: str) -> Table:
  """The table ``table_id``, a paper's or a study's."""
  all_tables = tables(studies=True)
  if table_id not in all_tables:
    raise ValueError(f"unknown table {table_id!r}; tables are {sorted(all_tables)}.")
  return all_tables[table_id]


#: The fields a row with ``runs_of`` must share with the row whose runs it reads.
RUN_FIELDS = ("config", "overrides", "steps", "run_steps", "seeds", "blocker")


def source(table: Table, row: Row) -> tuple[Table, Row]:
  """The table and row whose runs ``row`` reads: ``row.runs_of`` resolved, else ``(table,
  row)`` itself.

  Raises:
    ValueError: ``runs_of`` names an unknown table or row, a row that itself reads another's
      runs, or a row whose run fields (:data:`RUN_FIELDS`) differ from ``row``'s.
  """
  if row.runs_of is None:
    return table, row
  table_id, row_id = row.runs_of.split("/")
  other_table = get(table_id)
  other = other_table.row(row_id)
  if other.runs_of is not None:
    raise ValueError(f"{table.id}/{row.id}: runs_of {row.runs_of!r} reads the runs of "
                     f"{other.runs_of!r} itself; name that row instead.")
  differ = [f for f in RUN_FIELDS if getattr(row, f) != getattr(other, f)]
  if differ:
    raise ValueError(f"{table.id}/{row.id}: runs_of {row.runs_of!r} has other {differ} "
                     f"({[getattr(row, f) for f in differ]} here, "
                     f"{[getattr(other, f) for f in differ]} there); a row can only read "
                     "the runs of the same config and budget.")
  return other_table, other


def as_dict(row: Row) -> dict[str, Any]:
  return dataclasses.asdict(row)
