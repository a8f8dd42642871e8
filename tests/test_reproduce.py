"""The reproduction harness (experiments/reproduce) and the released weights (lvf_jax.zoo).

Every row of every table has a config that loads, validates and builds (rows whose data is
not available here load their config only); one row per paper runs end to end through the
command line for two steps on tiny data and lands in its table's page; the page's
statistics are NumPy's; the verdicts follow their definitions (a row at its task's floor or
short of its budget never meets); every released model re-evaluates to the figure on its card
and meets or beats its row.
"""

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest

from experiments.reproduce import __main__ as cli
from experiments.reproduce import (archive, diagnostics, floors, harness, pages, provenance, rows,
                                   runner, step_times)
from experiments.reproduce import verdict as verdict_lib
from lvf_jax import zoo
from lvf_jax.data import paths, readers
from lvf_jax.train import builders, config as config_lib
import tolerances as tol

TABLES = rows.tables()
PAPERS = ("lvf", "ncgru", "nnrnn", "antisymmetric")
RAW = paths.raw_data_dir()
HAVE_DATA = all((RAW / d).is_dir() for d in ("mnist", "ptb", "polyphonic"))
needs_data = pytest.mark.skipif(not HAVE_DATA, reason=f"shared data not found under {RAW} "
                                f"(set {paths.DATA_DIR_ENV})")


@pytest.fixture(scope="module")
def tfds_dir(tmp_path_factory):
  reuse = os.environ.get("LVF_JAX_TEST_TFDS_DIR")
  return reuse if reuse else str(tmp_path_factory.mktemp("tfds_reproduce"))


def test_every_paper_has_tables_and_every_row_is_complete():
  assert {t.paper for t in TABLES.values()} == set(PAPERS)
  for t in TABLES.values():
    assert t.rows, t.id
    for r in t.rows:
      assert r.config or r.blocker or r.analytic, (t.id, r.id)
      assert set(r.paper) <= set(rows.METRICS)
      assert all(math.isfinite(v) for v in r.paper.values()), (t.id, r.id)
      if r.runs_of:  # the row it names exists, trains, and has the same config and budget
        rows.source(t, r)
      for name in r.explained_by:  # each tested setting is a declared row that trains
        table_id, row_id = name.split("/")
        tested = TABLES[table_id].row(row_id)
        assert tested.config and tested.id != r.id, (t.id, r.id, name)


def test_no_two_rows_train_the_same_run():
  # a cell that reports the same trained model as another reads its runs (runs_of)
  trained = {}
  for t in TABLES.values():
    for r in t.rows:
      if r.config is None or r.runs_of is not None:
        continue
      key = json.dumps([getattr(r, f) for f in rows.RUN_FIELDS], sort_keys=True)
      assert key not in trained, (f"{t.id}/{r.id}", trained.get(key))
      trained[key] = f"{t.id}/{r.id}"
  params_row = TABLES["nnrnn-t1"].row("ptbchar-nnrnn-params-t150")
  assert params_row.runs_of == "nnrnn-t1/ptbchar-nnrnn-n1024-t150"
  assert rows.source(TABLES["nnrnn-t1"], params_row)[1].id == "ptbchar-nnrnn-n1024-t150"


def test_synthetic_rows_take_the_table_model_and_column_notes():
  from experiments.reproduce.tables import ncgru  # pylint: disable=g-import-not-at-top
  models = (("m", "M", "m", {}, 8, (1.0, 2.0)),)
  a, b = ncgru._synthetic(  # pylint: disable=protected-access
      "adding", "adding.py", "val_loss", -5, (200, 400), models, steps=10, seeds=1,
      notes={"*": "all rows", "m": "this model", "m-t400": "this column"})
  assert a.note == "All rows; this model." and b.note == "All rows; this model; this column."
  assert (a.paper, b.paper) == ({"val_loss": 1e-5}, {"val_loss": 2e-5})


def test_row_rejects_unknown_metric_and_missing_config():
  with pytest.raises(ValueError, match="unknown metric"):
    rows.Row(id="x", task="t", model="m", paper={"bleu": 1.0}, config="copy.py:lvf")
  with pytest.raises(ValueError, match="needs a blocker"):
    rows.Row(id="x", task="t", model="m", paper={"test_loss": 1.0})
  with pytest.raises(ValueError, match="unknown table"):
    rows.get("lvf-t99")
  with pytest.raises(ValueError, match="unknown row"):
    rows.get("lvf-t4").row("nope")


@pytest.mark.parametrize("text, found", [
    ("a training step takes 11-22 s on one core", ["11-22 s"]),
    ("50 epochs took about 12.5 h on 2 cores", ["12.5 h"]),
    ("one epoch takes about 10 min (2.3 s a step)", ["10 min", "2.3 s"]),
    ("the 50 epochs take 2.5-3 min", ["2.5-3 min"]),
    ("10,000 steps at batch 50, n = 1400 hidden, 110 Givens layers, 3 layers", []),
])
def test_a_row_may_not_state_a_duration(text, found):
  """Notes and blockers state settings: a duration is a measurement (its record's)."""
  assert rows.stated_durations(text) == found
  if found:
    with pytest.raises(ValueError, match="states the duration"):
      rows.Row(id="x", task="t", model="m", paper={}, config="copy.py:lvf", steps=10, note=text)
    with pytest.raises(ValueError, match="states the duration"):
      rows.Row(id="x", task="t", model="m", paper={}, blocker="budget: a GPU row; " + text)
  else:
    rows.Row(id="x", task="t", model="m", paper={}, config="copy.py:lvf", steps=10, note=text)


def _no_data(row):
  return row.blocker is not None and row.blocker.startswith("no data")


@needs_data
@pytest.mark.parametrize("table_id", sorted(TABLES))
def test_every_row_config_validates_and_builds(table_id, tfds_dir, monkeypatch):
  monkeypatch.setenv(paths.TFDS_DIR_ENV, tfds_dir)
  for row in TABLES[table_id].rows:
    if row.config is None:
      continue
    c = harness.row_config(row)
    budget = row.run_steps or row.steps
    if budget:
      assert c.train.steps == budget, row.id
    for key, value in row.overrides.items():
      node = c
      for k in key.split(".")[:-1]:
        node = node[k]
      got = node[key.split(".")[-1]]
      assert (tuple(got) if isinstance(got, (list, tuple)) else got) == (
          tuple(value) if isinstance(value, (list, tuple)) else value), (row.id, key)
    if _no_data(row):
      continue
    harness.shrink_data(c)  # validation reads whole splits; model and optimiser unchanged
    pipeline = config_lib.validate_config(c)
    model = builders.build_model(c, pipeline.model_head())
    variables = builders.abstract_variables(model, pipeline)
    assert variables["params"], row.id


SMOKE_ROWS = (("lvf-t4", "copy-lvf"), ("ncgru-t3", "adding-ncgru-uc-t200"),
              ("nnrnn-t1", "ptbchar-nnrnn-n1024-t150"), ("antisymmetric-t1",
                                                         "mnist-antisymmetric"))


def test_smoke_rows_cover_every_paper():
  assert {rows.get(t).paper for t, _ in SMOKE_ROWS} == set(PAPERS)


@needs_data
@pytest.mark.parametrize("table_id,row_id", SMOKE_ROWS)
def test_one_row_per_paper_runs_through_the_command_line(table_id, row_id, tmp_path,
                                                         tfds_dir, monkeypatch):
  monkeypatch.setenv(paths.TFDS_DIR_ENV, tfds_dir)
  work, out = tmp_path / "runs", tmp_path / "pages"
  argv = [table_id, "--rows", row_id, "--seeds", "1", "--smoke", "--workdir", str(work),
          "--out", str(out)]
  assert cli.main(argv) == 0
  result = json.loads((work / table_id / row_id / "seed0" / harness.RESULT).read_text())
  assert result["steps"] == 2 and result["smoke"]
  row = rows.get(table_id).row(row_id)
  for metric in row.paper:
    assert math.isfinite(result["metrics"][metric]), metric
  assert os.path.exists(work / table_id / row_id / "seed0" / "best_variables.msgpack")
  page = (out / f"{table_id}.md").read_text()
  line = next(l for l in page.splitlines() if l.startswith(f"| {row.task} | {row.model} |"))
  metric = next(iter(row.paper))
  ours = harness.summarize([result["metrics"][metric]], metric)
  assert f"| {ours} |" in line
  assert result["commit"] in page and f"--rows {row_id}" in page
  png = matplotlib.image.imread(out / f"{table_id}.png")
  assert png.shape[0] > 100 and png.shape[1] > 100 and float(np.std(png[..., :3])) > 0.01
  # a second invocation finds the finished seed and trains nothing
  mtime = os.path.getmtime(work / table_id / row_id / "seed0" / harness.RESULT)
  assert cli.main(argv) == 0
  assert os.path.getmtime(work / table_id / row_id / "seed0" / harness.RESULT) == mtime


def _margin_spectrum(logits, margin):
  """Vorontsov et al. 2017's singular values ``2 m (sigmoid(p) - 1/2) + 1`` in float64."""
  p = np.asarray(logits, np.float64)
  return 2.0 * margin * (1.0 / (1.0 + np.exp(-p)) - 0.5) + 1.0


@needs_data
def test_the_soft_orthogonal_rows_record_the_spectrum_of_their_margin(tmp_path, tfds_dir,
                                                                      monkeypatch):
  monkeypatch.setenv(paths.TFDS_DIR_ENV, tfds_dir)
  table = rows.get("antisymmetric-t1")
  row = table.row("mnist-softorth-margin-0.1")
  work = str(tmp_path)
  got = runner.run_row(table, row, work, smoke=True, log=lambda *_: None)["diagnostics"]
  run_dir = runner.row_dir(table, row, work, 0)
  _, variables, _ = zoo.load_run(run_dir)
  params = variables["params"]["rnn"]["layer_0"]["cell"]
  s = _margin_spectrum(params["singular_logits"], 0.1)
  # W = U diag(s) V^T from float32 orthogonal factors: its singular values are s to about
  # n eps32 relative (n = 128)
  want = {"min": s.min(), "mean": s.mean(), "max": s.max()}
  assert got["singular_values"] == pytest.approx(want, rel=1e-4)
  assert 0.9 <= got["singular_values"]["min"] <= got["singular_values"]["max"] <= 1.1
  # a spread spectrum (the trained logits replaced) is read as the formula gives it
  spread = np.random.default_rng(0).normal(0.0, 3.0, s.shape).astype(np.float32)
  layer = diagnostics._first_cell(run_dir)  # pylint: disable=protected-access
  monkeypatch.setattr(diagnostics, "_first_cell", lambda _: (
      layer[0], {**layer[1], "singular_logits": spread}, layer[2]))
  s = _margin_spectrum(spread, 0.1)
  assert diagnostics.singular_values(run_dir) == pytest.approx(
      {"min": s.min(), "mean": s.mean(), "max": s.max()}, rel=1e-4)
  assert diagnostics.cell("singular_values", {"min": 0.9, "mean": 1.0, "max": 1.1}) == (
      "0.9 / 1 / 1.1")


def _fake_result(work, table, row, seed, metrics, steps=100, date="2026-01-01 00:00 UTC"):
  d = work / table.id / row.id / f"seed{seed}"
  d.mkdir(parents=True, exist_ok=True)
  (d / harness.RESULT).write_text(json.dumps({
      "table": table.id, "row": row.id, "seed": seed, "steps": steps, "parameters": 1234,
      "metrics": metrics, "wall_seconds": 60.0 * (seed + 1), "commit": "abc1234",
      "machine": "test cpu", "date": date, "command": harness.command(table, row)}))
  return d


def test_pages_are_regenerated_from_the_archive_without_the_runs(tmp_path):
  """The results behind a page are archived beside it: the page written later on a machine
  without the runs is the same, with its figure; a shorter re-run does not replace a
  finished one, a longer or newer one does."""
  table = rows.get("lvf-t4")
  work, out = tmp_path / "runs", tmp_path / "pages"
  for seed, loss in enumerate([0.02, 0.03]):
    d = _fake_result(work, table, table.row("copy-lvf"), seed, {"test_loss": loss})
    curve = [{"step": s, "split": "validation", "loss": 1.0 / s} for s in range(1, 500)]
    (d / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in curve) + "\n")
  _fake_result(work, table, table.row("copy-rnn"), 0, {"test_loss": 0.5})
  first = open(harness.write_table(table, str(work), str(out))).read()
  stored = json.loads((out / "results" / "lvf-t4.json").read_text())
  points = stored["rows"]["copy-lvf"]["seeds"]["0"]["curve"]["points"]
  assert len(points) <= 200 and points[0] == [1, 1.0] and points[-1] == [499, 1.0 / 499]
  (out / "lvf-t4.png").unlink()
  again = open(harness.write_table(table, str(tmp_path / "empty"), str(out))).read()
  assert again == first and "| 0.025 ± 0.00707 (2 seeds) |" in again
  png = matplotlib.image.imread(out / "lvf-t4.png")  # redrawn from the archived curves
  assert float(np.std(png[..., :3])) > 0.01
  # a partial re-run (fewer steps) keeps the archived result; a full newer one replaces it
  later = tmp_path / "later"
  _fake_result(later, table, table.row("copy-rnn"), 0, {"test_loss": 0.9}, steps=10,
               date="2026-02-01 00:00 UTC")
  assert "| 0.5 |" in open(harness.write_table(table, str(later), str(out))).read()
  _fake_result(later, table, table.row("copy-rnn"), 0, {"test_loss": 0.4},
               steps=table.row("copy-rnn").steps, date="2026-02-01 00:00 UTC")
  page = open(harness.write_table(table, str(later), str(out))).read()
  assert "| 0.4 |" in page and "| 0.5 |" not in page
  index = open(harness.write_index({table.id: table}, str(tmp_path / "empty"), str(out))).read()
  # copy-lvf ran 100 of its 10,000 steps (partial); copy-rnn's 0.4 at its full budget is
  # worse than the floor;
  # the columns: meets, beats, unexplained, misses, partial, at floor, not run, stand-in
  assert f"| [{table.id}]({table.id}.md) Table 4 |" in index
  assert f"| {len(table.rows)} | 0 | 0 | 0 | 0 | 1 | 1 | {len(table.rows) - 2} | 0 |" in index


def test_a_row_without_a_record_is_not_run_whatever_its_archive_printed(tmp_path):
  """A figure known only as printed (an archived ``"page"`` entry) is no record: the row
  says "not run" until a run's record exists."""
  table = rows.get("lvf-t4")
  row = table.row("copy-urnn")
  out = tmp_path / "pages"
  archive.save(archive.path_for(str(out), table.id), {"rows": {row.id: {"page": {
      "metrics": [["test_loss", "0.123"]], "verdict": "meets", "params": "999",
      "steps": "5", "wall": "1.0 min", "flag": "", "runs": []}}}})
  page = open(harness.write_table(table, str(tmp_path / "none"), str(out))).read()
  line = next(l for l in page.splitlines() if l.startswith(f"| {row.task} | {row.model} |"))
  assert "0.123" not in page and "| not run |" in line and "**not run: queued" in line
  _fake_result(tmp_path / "runs", table, row, 0, {"test_loss": 2e-3, "test_accuracy": 100.0},
               steps=10000)
  page = open(harness.write_table(table, str(tmp_path / "runs"), str(out))).read()
  assert "| 0.002 |" in page and "| beats |" in page


def test_page_statistics_and_verdicts_are_numpys(tmp_path):
  table = rows.get("lvf-t4")
  row = table.row("copy-lvf")
  losses, accs = [0.02, 0.018, 0.025], [95.5, 96.0, 94.0]
  for seed, (l, a) in enumerate(zip(losses, accs)):
    _fake_result(tmp_path, table, row, seed, {"test_loss": l, "test_accuracy": a},
                 steps=row.steps)
  page = harness.table_markdown(table, str(tmp_path))
  mean, std = np.mean(losses), np.std(losses, ddof=1)
  assert f"{mean:.3g} ± {std:.3g} (3 seeds)" in page
  assert f"{np.mean(accs):.1f} % ± {np.std(accs, ddof=1):.1f} % (3 seeds)" in page
  # the mean is the paper's 0.021, but the seed at 0.025 is worse than it by more than twice
  # the tolerance, which the spread widens at most to twice the printed precision (half a
  # unit of 2.1e-2)
  assert abs(mean - 0.021) <= 2 * std / np.sqrt(3)
  cap = verdict_lib.SPREAD_CAP * verdict_lib.half_unit(0.021)
  assert max(losses) - 0.021 > verdict_lib.WORST_SEED * cap
  line = next(l for l in page.splitlines() if l.startswith("| copy T=200 | lvfRNN |"))
  assert "| misses (" in line and "| 0.09452 (no-memory loss) |" in line
  assert "2.0 min" in line  # mean wall time of 1, 2 and 3 minutes
  assert "**not run: " in page  # the other rows, each with its reason


def _records(values, metric="test_loss", steps=100):
  return [{"metrics": {metric: v}, "steps": steps} for v in values]


def test_a_row_at_its_floor_never_meets():
  """The copy RNN at the no-memory loss: better than the paper's value, still at floor; the
  paper's own value at the floor too."""
  paper = {"test_loss": 0.095}
  at = verdict_lib.judge(paper, _records([0.0937]), floors={"test_loss": 0.0945})
  assert at.category == "at floor, as the paper" and at.counted == "at floor"
  low = verdict_lib.judge({"test_loss": 0.02}, _records([0.0937]), floors={"test_loss": 0.0945})
  assert low.category == "at floor"
  clear = verdict_lib.judge({"test_loss": 0.02}, _records([0.0199]), floors={"test_loss": 0.0945})
  assert clear.category == "meets"
  # accuracy at chance
  chance = verdict_lib.judge({"test_accuracy": 95.0}, _records([12.0], "test_accuracy"),
                             floors={"test_accuracy": (10.0, "chance")})
  assert chance.category == "at floor"


def test_a_row_short_of_its_budget_never_meets():
  paper = {"test_loss": 0.1}
  assert verdict_lib.judge(paper, _records([0.05], steps=50), budget=100).category == "partial"
  assert verdict_lib.judge(paper, _records([0.099], steps=100), budget=100).category == "meets"
  assert verdict_lib.judge(paper, [], budget=100).category == "not run"
  assert verdict_lib.judge({}, _records([0.5])).category == ""  # a stand-in
  diverged = [{"metrics": {}, "steps": 100, "diverged_at": 21}]
  assert verdict_lib.judge(paper, diverged, budget=100).category == "misses"
  # fewer seeds than the row plans is short of its budget too
  one_of_three = verdict_lib.judge(paper, _records([0.099]), budget=100, seeds=3)
  assert one_of_three.category == "partial"
  assert verdict_lib.judge(paper, _records([0.099] * 3), budget=100, seeds=3).category == "meets"


def test_floors_of_music_and_ptb_are_the_papers_no_memory_models():
  """A Bernoulli per key and a per-key Markov chain, both fitted on training rolls; the
  training unigram on PTB; the stored floors are those the data gives."""
  on_off = np.array([[1], [0]] * 50, np.uint8)  # a key that alternates
  rolls = [on_off]
  # the predicted frames 1..99 hold 49 ons: p = 49/99, whose entropy is log 2 (1 - 7.4e-5)
  bernoulli = lambda test: floors.averages(floors.bernoulli_frame_nll(rolls, test))
  assert bernoulli(rolls)["frame_weighted"] == pytest.approx(np.log(2), rel=1e-3)
  markov = floors.averages(floors.markov_frame_nll(rolls, rolls))
  assert markov["frame_weighted"] < 0.05  # the chain predicts the alternation
  two = [on_off, on_off[:40]]  # the per-piece mean weighs each piece once, not each frame
  assert bernoulli(two)["per_piece"] == pytest.approx(
      np.mean([bernoulli([p])["frame_weighted"] for p in two]))
  u = floors.unigram([["a", "a", "b", "<eos>"]], [["a", "b"]])
  assert u["nats"] == pytest.approx(-(np.log(0.5) + np.log(0.25)) / 2)
  assert u["accuracy"] == 50.0
  stored = floors.load()
  assert stored["musedata"]["markov_nll"] < stored["musedata"]["bernoulli_nll"]
  row = rows.get("lvf-t3").row("jsb-lvf")
  assert floors.of_row(row, [], stored)["test_loss"][0] == stored["jsb"]["markov_nll"]
  # MuseData is judged by the per-piece mean: its floor is the per-piece mean too
  muse = rows.get("lvf-t3").row("musedata-lvf")
  assert floors.of_row(muse, [], stored)["test_nll_per_sequence"][0] == min(
      stored["musedata"]["markov_nll_per_piece"], stored["musedata"]["bernoulli_nll_per_piece"])
  assert floors.of_row(rows.get("antisymmetric-t1").row("mnist-lstm"), [], stored) == {
      "test_accuracy": (10.0, "chance")}


def test_the_last_step_comes_from_the_record_or_its_curve():
  """A record's last validation (its ``last`` metrics, else its curve's last point) is the
  page's last-step value; a record with neither shows a dash."""
  curve = {"curve": {"split": "validation", "points": [[10, 0.5], [20, 0.25]]}}
  assert pages.last_cell("test_loss", [curve]) == "0.25 (step 20)"
  assert pages.last_cell("test_bpc", [curve]) == pages.summarize([0.25 / math.log(2)],
                                                                 "test_bpc") + " (step 20)"
  last = {"last": {"step": 30, "metrics": {"val_loss": 0.125, "val_accuracy": 0.9}}}
  assert pages.last_cell("test_accuracy", [last]) == "90.0 % (step 30)"
  assert pages.last_cell("test_accuracy", [curve]) == pages.NO_VALUE
  assert pages.last_cell("test_loss", [curve, {"metrics": {}}]) == pages.NO_VALUE
  train = {"curve": {"split": "train", "points": [[5, 0.75]]}}
  assert pages.last_cell("min_train_loss", [train]) == "0.75 (step 5)"


def test_a_run_note_cites_a_record_that_holds_its_numbers(tmp_path):
  record = {"steps": 10000, "best_validation_step": 6600,
            "metrics": {"test_loss": 2.55e-5, "test_accuracy": 0.954}}
  assert archive.unbacked_numbers(
      {"text": "best validation at step 6,600 of 10000: 2.55e-5, 95.4 %"}, record) == []
  assert archive.unbacked_numbers({"text": "97.9 % at step 8,600"}, record) == ["97.9", "8,600"]
  table = rows.get("lvf-t4")
  out = tmp_path / "pages"
  archive.save(archive.path_for(str(out), table.id), {"rows": {"copy-rnn": {
      "seeds": {"0": {**record, "seed": 0, "command": "c", "commit": "abc", "machine": "m",
                      "date": "d", "wall_seconds": 1.0}},
      "notes": [{"text": "best validation at step 6,600; 97.9 % later", "seed": "0"}]}}})
  page = open(harness.write_table(table, str(tmp_path / "none"), str(out))).read()
  assert "Best validation at step 6,600; 97.9 % later (seed 0) **(not in the record: 97.9)**" \
      in page


def test_every_part_of_a_note_cell_is_a_sentence():
  assert pages.as_sentence("the loss falls (seed 0)") == "The loss falls (seed 0)."
  assert pages.as_sentence("nnRNN at batch 10") == "nnRNN at batch 10."
  assert pages.as_sentence("`copy.py:lvf` as printed.") == "`copy.py:lvf` as printed."
  assert pages.as_sentence("**not run: queued**") == "**not run: queued**"
  table = rows.get("lvf-t4")
  row = dataclasses.replace(table.row("copy-fcurnn"), note="a note without a stop",
                            differs="the preset's batch", explained_by=())
  cell = pages._note_cell(table, row, [], None)  # pylint: disable=protected-access
  assert "A note without a stop. Differs from the paper: the preset's batch." in cell


def test_analytic_rows_are_computed_and_compared_at_the_papers_precision(tmp_path):
  """nnRNN Table 6: J_tot of a Schur form, computed (no training), on the page with its
  verdict; the comparison rounds ours to the paper's three printed digits."""
  out = tmp_path / "pages"
  assert cli.main(["nnrnn-t6", "--rows", "fmc-a1-b0-d0,fmc-a0.95-b0.005-d0",
                   "--workdir", str(tmp_path), "--out", str(out)]) == 0
  table = rows.get("nnrnn-t6")
  for row_id in ("fmc-a1-b0-d0", "fmc-a0.95-b0.005-d0"):
    (result,) = harness.results_of_row(table, table.row(row_id), str(tmp_path))
    assert result["steps"] == 0 and result["analytic"] == "fmc_total"
    assert result["metrics"]["condition_number"] < 1e6
  # alpha = 1, beta = d = 0: the delay line, source e_1, unit noise on every unit (eq. 7
  # summed in NumPy).
  theta = np.diag(np.ones(99), -1)
  c = sum(np.linalg.matrix_power(theta, k) @ np.linalg.matrix_power(theta, k).T
          for k in range(100))
  vs = [np.linalg.matrix_power(theta, k)[:, 0] for k in range(400)]
  want = sum(v @ np.linalg.solve(c, v) for v in vs)
  (result,) = harness.results_of_row(table, table.row("fmc-a1-b0-d0"), str(tmp_path))
  # float64 against an independent NumPy solve; c = diag(1, .., 100) has condition 100
  np.testing.assert_allclose(result["metrics"]["fmc_total"], want, rtol=tol.F64_CONDITIONED["rtol"])
  line = next(l for l in (out / "nnrnn-t6.md").read_text().splitlines()
              if "Theta(alpha=1, beta=0, d=0)" in l)
  assert "| meets |" in line and "| computed |" in line
  assert verdict_lib.compare("fmc_total", [5.187], 5.19) == "meets"
  assert verdict_lib.compare("fmc_total", [5.2], 5.19) == "misses"


def test_stand_in_rows_show_validation_and_test_loss_without_a_verdict(tmp_path):
  """FSDD beside TIMIT: a row without a paper value shows both losses, no verdict at its full
  budget, and is counted as a stand-in in the index; short of its budget it is partial."""
  table = rows.get("lvf-t2")
  row = table.row("fsdd-lvf")
  assert row.paper == {} and harness.row_config(row).task.name == "fsdd"
  _fake_result(tmp_path, table, row, 0, {"val_loss": 41.5, "test_loss": 43.25}, steps=row.steps)
  page = harness.table_markdown(table, str(tmp_path))
  first = next(l for l in page.splitlines() if l.startswith("| FSDD (TIMIT stand-in) | lvfRNN"))
  assert "| val_loss | - | — | 41.5 | — |  |" in first
  assert "|  |  | test_loss | - | — | 43.25 | — |" in page
  index = open(harness.write_index({table.id: table}, str(tmp_path), str(tmp_path / "p"))).read()
  assert "| 10 | 0 | 0 | 0 | 0 | 0 | 0 | 5 | 5 |" in index  # 5 TIMIT rows, 5 stand-ins
  _fake_result(tmp_path, table, row, 0, {"val_loss": 41.5, "test_loss": 43.25},
               steps=row.steps - 1)
  page = harness.table_markdown(table, str(tmp_path))
  first = next(l for l in page.splitlines() if l.startswith("| FSDD (TIMIT stand-in) | lvfRNN"))
  assert "| val_loss | - | — | 41.5 | — | partial |" in first
  index = open(harness.write_index({table.id: table}, str(tmp_path), str(tmp_path / "q"))).read()
  assert "| 10 | 0 | 0 | 0 | 0 | 1 | 0 | 5 | 4 |" in index
  # a quoted row states the preset's budget; a run's own smaller budget is shown, not used
  quoted = rows.get("antisymmetric-t1").row("pmnist-lstm")
  assert quoted.steps == 30030
  _fake_result(tmp_path, rows.get("antisymmetric-t1"), quoted, 0, {"test_accuracy": 77.0},
               steps=1750)
  (result,) = harness.results_of_row(rows.get("antisymmetric-t1"), quoted, str(tmp_path))
  own = pages.steps_cell(quoted, [{**result, "budget_steps": 1750}])
  assert own.startswith("1750 of 30030 (6 %), the run's budget 1750; about ")
  assert pages.steps_cell(quoted, [result]).startswith("1750 of 30030 (6 %); about ")
  assert runner.judge_row(quoted, [{**result, "budget_steps": 1750}]).category == "partial"


def test_a_partial_row_whose_wall_time_misses_a_part_states_the_measured_hours_left():
  """A partial record whose wall time misses a stopped part gives no pace of its own: the
  hours left come from the row's measured step time, named with its machine and date, and
  are absent when that is not measured either."""
  row = rows.get("lvf-t4").row("copy-lvf")
  budget = runner.budget_of(row)
  records = [{"steps": budget // 4, "wall_seconds": 10.0, "wall_complete": False,
              "resumed_from": budget // 8}] * row.seeds
  entry = {"seconds_per_step": 0.37, "machine": "a test cpu", "date": "2026-01-02 00:00 UTC",
           "commit": "abc1234", "load": 0.5}
  expected = 0.37 * (budget - budget // 4) * row.seeds / 3600.0
  text = pages.steps_cell(row, records, entry)
  assert f"; about {expected:.1f} h left for the full budget at 0.37 s a step" in text
  assert "measured at abc1234 on a test cpu, load average 0.5, 2026-01-02 00:00 UTC" in text
  assert pages.hours_left(row, records) is None
  assert " h " not in pages.steps_cell(row, records)
  timed = [{**r, "wall_complete": True} for r in records]
  assert "of the records' machine left" in pages.steps_cell(row, timed, entry)


def test_a_figure_is_drawn_only_from_recorded_curves(tmp_path):
  table = rows.get("lvf-t4")
  out = tmp_path / "pages"
  out.mkdir()
  (out / "lvf-t4.png").write_bytes(b"a figure of runs without records")
  page = open(harness.write_table(table, str(tmp_path / "none"), str(out))).read()
  assert not (out / "lvf-t4.png").exists() and "![" not in page
  d = _fake_result(tmp_path / "runs", table, table.row("copy-rnn"), 0, {"test_loss": 0.5})
  (d / "metrics.jsonl").write_text(json.dumps({"step": 1, "split": "validation",
                                               "loss": 0.5}) + "\n")
  page = open(harness.write_table(table, str(tmp_path / "runs"), str(out))).read()
  assert (out / "lvf-t4.png").read_bytes()[:4] == b"\x89PNG"
  assert "![learning curves](lvf-t4.png)" in page


def test_blocked_rows_say_why_and_keep_their_command(tmp_path):
  table = rows.get("lvf-t2")
  page = harness.table_markdown(table, str(tmp_path))
  blocked = [row for row in table.rows if row.blocker]
  assert len(blocked) == 5  # the TIMIT rows; the FSDD stand-ins beside them run
  for row in table.rows:
    assert row.blocker is None or row.blocker in page
    assert harness.command(table, row) in page


def test_gpu_rows_run_only_when_asked_and_their_page_says_why(tmp_path, monkeypatch):
  table = rows.get("nnrnn-t1")
  row = table.row("ptbchar-rnn-orth-n1024-t300")
  assert row.budget_blocked and row.blocker.startswith("budget: a GPU row")
  assert not rows.get("lvf-t2").row("timit-lvf").budget_blocked  # no data: never runs here
  cmd = harness.command(table, row)
  assert cmd.endswith(f"--rows {row.id} --include-blocked")
  measured = {f"{table.id}/{row.id}": {"seconds_per_step": 2.0, "commit": "abc", "load": 1.0,
                                        "machine": "test cpu", "date": "2026-01-01 00:00 UTC"}}
  monkeypatch.setattr(step_times, "load", lambda path=None: measured)
  page = harness.table_markdown(table, str(tmp_path / "none"))
  line = next(l for l in page.splitlines() if l.startswith(f"| {row.task} | {row.model} |"))
  full = harness.command(table, row, steps=row.steps)  # the paper's budget
  hours = 2.0 * row.steps * row.seeds / 3600
  assert f"**not run: {row.blocker}; about {hours:.1f} h for {row.seeds} x {row.steps} steps at 2 s" \
      in line and "test cpu, load average 1," in line and f"`{full}`" in page
  ran = []
  monkeypatch.setattr(runner, "run_row", lambda t, r, *a, **k: ran.append((r.id, k["smoke"])))
  argv = ["nnrnn-t1", "--rows", f"{row.id},ptbchar-rnn-orth-params-t300", "--seeds", "1",
          "--workdir", str(tmp_path / "runs"), "--out", str(tmp_path / "pages")]
  assert cli.main(argv) == 0 and ran == []
  assert cli.main(argv + ["--include-blocked"]) == 0
  both = [row.id, "ptbchar-rnn-orth-params-t300"]  # the second reads the first's runs
  assert ran == [(r, False) for r in both]
  ran.clear()
  assert cli.main(argv + ["--smoke"]) == 0 and ran == [(r, True) for r in both]
  lvf_t2 = ["lvf-t2", "--rows", "timit-lvf", "--workdir", str(tmp_path / "runs"), "--out",
            str(tmp_path / "pages"), "--include-blocked"]
  ran.clear()
  assert cli.main(lvf_t2) == 0 and ran == []


def test_a_row_reading_another_rows_runs_uses_its_directory_and_its_config(tmp_path):
  """nnRNN Table 4 reports the accuracy of Table 1's model states: its rows read Table 1's
  runs (no second training, Table 1's command on the page); a row whose config or budget
  differs from the row it names, or that names a row reading a third, is refused."""
  t1, t4 = rows.get("nnrnn-t1"), rows.get("nnrnn-t4")
  assert len(t4.rows) == len(t1.rows)
  same_model = ("ptbchar-rnn-params-", "ptbchar-rnn-orth-params-", "ptbchar-nnrnn-params-")
  for row in t4.rows:  # a fixed-budget model of 1024 units is the N = 1024 column's model
    trained = (t1.row(row.id.replace("-params-", "-n1024-")) if row.id.startswith(same_model)
               else t1.row(row.id))
    assert rows.source(t4, row) == (t1, trained)
  lvf_t1 = rows.get("lvf-t1")  # the lvfRNN paper quotes the nnRNN paper's N = 1024 model
  assert rows.source(lvf_t1, lvf_t1.row("ptb-nnrnn")) == (t1, t1.row("ptbchar-nnrnn-n1024-t150"))
  row_id = "ptbchar-nnrnn-n1024-t150"
  reader = t4.row(row_id)
  _fake_result(tmp_path, t1, t1.row(row_id), 0, {"test_bpc": 1.5, "test_accuracy": 67.25})
  (result,) = harness.results_of_row(t4, reader, str(tmp_path))
  assert result["row"] == row_id and result["table"] == "nnrnn-t1"
  logged = []
  done = harness.run_row(t4, reader, str(tmp_path), steps=100, log=logged.append)
  assert done == result and "nnrnn-t1/" + row_id in logged[0] and "skipped" in logged[0]
  assert not (tmp_path / "nnrnn-t4").exists()
  page = harness.table_markdown(t4, str(tmp_path))
  line = next(l for l in page.splitlines()
              if l.startswith("| PTB-char, fixed # hidden units (N = 1024), BPTT 150 | nnRNN |"))
  assert "| 67.2 % |" in line
  assert f"`python -m experiments.reproduce nnrnn-t1 --rows {row_id} --include-blocked`" in page
  assert harness.command(t4, reader) == harness.command(t1, t1.row(row_id))
  # Table 1's fixed-budget nnRNN cell reads the same run: one curve, named by the N = 1024 row
  d = tmp_path / "nnrnn-t1" / row_id / "seed0"
  (d / "metrics.jsonl").write_text("\n".join(json.dumps(
      {"step": s, "split": "validation", "loss": 2.0 / s}) for s in range(1, 20)) + "\n")
  (label, pts, split), = pages.curves_of(t1, str(tmp_path))
  assert label == f"nnRNN ({t1.row(row_id).task})" and split == "validation"
  assert pts[-1].tolist() == [19, 2.0 / 19]
  assert harness.release_row(t4, reader, str(tmp_path)).startswith(
      f"not released (the runs of nnrnn-t1/{row_id}")
  # a reading row must share the config and budget, and name the row that trains
  longer = rows.Table(paper="x", number="1", caption="", citation="", rows=(
      dataclasses.replace(reader, run_steps=reader.run_steps + 1),
      dataclasses.replace(reader, id="second", runs_of=f"nnrnn-t4/{row_id}")))
  with pytest.raises(ValueError, match=r"other \['run_steps'\]"):
    rows.source(longer, longer.rows[0])
  with pytest.raises(ValueError, match="reads the runs of 'nnrnn-t1/"):
    rows.source(longer, longer.rows[1])
  with pytest.raises(ValueError, match="runs_of must be '<table>/<row>'"):
    dataclasses.replace(reader, runs_of="nnrnn-t1")
  with pytest.raises(ValueError, match="unknown row"):
    rows.source(longer, dataclasses.replace(reader, runs_of="nnrnn-t1/nope"))


def test_ncgru_ptb_char_rows_train_as_the_paper_says():
  """NC-GRU Table 5 (Mucllari et al. 2022, Sec. 4.5): every model at batch 32, BPTT 100,
  dropout 0.15 and Adam 5e-4, three layers; the baselines take the NC-GRU preset's
  training, and their run budget is whole epochs of it."""
  ncgru = harness.load_config("ptb_char.py:ncgru")
  assert (ncgru.train.batch_size, ncgru.task.options.bptt, ncgru.model.dropout) == (32, 100,
                                                                                    0.15)
  epoch = math.ceil(math.ceil(5_017_481 / 32) / 100)  # PTB-char training targets
  assert ncgru.train.eval_every == ncgru.train.checkpoint_every == epoch
  for row in rows.get("ncgru-t5").rows:
    c = harness.row_config(row)
    got = (c.train.batch_size, c.task.options.bptt, c.model.dropout, c.train.eval_every,
           c.train.checkpoint_every, c.optim.learning_rate, c.model.num_layers)
    assert got == (32, 100, 0.15, epoch, epoch, 5e-4, 3), row.id
    assert row.run_steps % epoch == 0 and c.train.steps == row.run_steps, row.id


def test_nnrnn_ptb_char_rows_train_the_papers_table5_sizes():
  """Kerg et al. 2019, Table 5 lists one hidden size per model and BPTT for the fixed-budget
  column (RNN and RNN-orth 1024, EURNN 2048, expRNN 1386, nnRNN 1024); the N = 1024 column
  trains 1024 units; every model trains with the table's optimiser (RMSprop, alpha 0.9, its
  learning rates) and nnRNN with its penalties."""
  table5 = {"rnn": 1024, "rnn-orth": 1024, "eurnn": 2048, "exprnn": 1386, "nnrnn": 1024}
  learning_rates = {"rnn": 1e-5, "rnn-orth": 1e-4, "eurnn": 1e-3, "exprnn": 5e-3, "nnrnn": 8e-4}
  for row in rows.get("nnrnn-t1").rows:
    slug, group = row.id[len("ptbchar-"):].rsplit("-", 2)[:2]
    c = harness.row_config(row)
    assert c.model.hidden == (table5[slug] if group == "params" else 1024), row.id
    bptt = int(row.id.rsplit("-t", 1)[1])
    assert c.task.options.bptt == bptt, row.id
    got = (c.optim.optimizer, c.optim.rmsprop_decay, c.optim.learning_rate)
    assert got == ("rmsprop", 0.9, learning_rates[slug]), row.id
    if slug == "exprnn":
      assert (c.optim.lr_orth, c.model.cell.orthogonal_init) == (1e-4, "cayley"), row.id
    if slug == "nnrnn":  # Table 5's nnRNN rows, length 150 / 300
      got = (c.optim.optimizer, c.optim.learning_rate, c.optim.rmsprop_decay, c.optim.lr_orth,
             c.model.cell.delta, c.model.cell.t_decay, c.model.cell.orthogonal_init)
      assert got == ("rmsprop", 8e-4, 0.9, 8e-5 if bptt == 150 else 6e-5,
                     1.0 if bptt == 150 else 1e-4, 1e-4, "cayley"), row.id


def test_metrics_of_run_derive_bpc_ppl_and_minimum_training_loss(tmp_path):
  (tmp_path / "summary.json").write_text(json.dumps(
      {"test_at_best_validation": {"loss": 1.0, "accuracy": 0.5}}))
  recs = [{"step": 1, "split": "train", "loss": 3.0}, {"step": 2, "split": "train", "loss": 2.0},
          {"step": 2, "split": "validation", "loss": 2.5},
          {"step": 3, "split": "train", "loss": 2.2},
          {"step": 3, "split": "validation", "loss": 2.4}]
  (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in recs))
  m = harness.metrics_of_run(str(tmp_path))
  assert m["test_bpc"] == pytest.approx(1.0 / math.log(2.0))
  assert m["test_ppl"] == pytest.approx(math.e)
  assert m["test_accuracy"] == pytest.approx(50.0)
  assert m["min_train_loss"] == 2.0 and m["val_loss"] == 2.4


@pytest.mark.parametrize("mask,expected", [({3}, "1 core"), ({0, 1, 5}, "3 cores")])
def test_machine_counts_the_cores_the_run_is_pinned_to(mask, expected, monkeypatch):
  monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(mask), raising=False)
  assert harness.usable_cores() == len(mask)
  assert harness.machine().endswith(", " + expected)


def test_machine_falls_back_to_the_machines_cores_without_an_affinity_mask(monkeypatch):
  monkeypatch.delattr(os, "sched_getaffinity", raising=False)
  monkeypatch.setattr(os, "cpu_count", lambda: 7)
  assert harness.usable_cores() == 7
  assert harness.machine().endswith(", 7 cores")


def test_set_field_reaches_nested_fields_and_names_a_missing_one():
  c = harness.load_config("copy.py:lvf")
  config_lib.set_field(c, "model.cell.divergence_free", True)
  config_lib.set_field(c, "task.options.T", 50)
  assert c.model.cell.divergence_free is True and c.task.options.T == 50
  with pytest.raises(ValueError, match="no field 'nosuch'"):
    config_lib.set_field(c, "nosuch.x", 1)
  with pytest.raises(ValueError, match="<file>.py:<preset>"):
    harness.load_config("copy")


def test_cli_lists_every_table(capsys):
  assert cli.main(["--list"]) == 0
  out = capsys.readouterr().out
  for table_id in TABLES:
    assert table_id in out


# ---------------------------------------------------------------------------- released weights


def test_zoo_rejects_unknown_names():
  with pytest.raises(ValueError, match="released models are"):
    zoo.load("no-such-model")


#: The committed pages and their archives of per-seed records.
PAGES = os.path.join(runner.ROOT, "docs", "reproduction")
#: Least relative tolerance of a card's check: a few float32 units in the last place.
ROUNDING_FLOOR = 8 * float(np.finfo(np.float32).eps)


@needs_data
@pytest.mark.parametrize("name", zoo.names())
def test_every_released_model_reevaluates_to_its_card(name, tfds_dir):
  info = zoo.card(name)
  got = zoo.evaluate(name, data_overrides=_data_overrides(zoo.config(name), tfds_dir))
  assert set(info["check"]["metrics"]) <= set(got)
  for key, want in info["check"]["metrics"].items():
    # the change that rounding alone can cause (another CPU kind or BLAS thread count),
    # measured by lvf_jax.zoo.rounding_tolerance when the card was written
    rel = max(info["check"]["tolerance"][key], ROUNDING_FLOOR)
    assert got[key] == pytest.approx(want, rel=rel, abs=1e-6), key
  # the card names a real row whose archived records (every seed) learned the task at the
  # paper's full budget: released when it met or beat the paper, its page gives today's
  # verdict (a far better loss is 'unexplained', a printed precision may be missed)
  row = rows.get(info["table"]).row(info["row"])
  stored = archive.load(archive.path_for(PAGES, info["table"]))
  records = list(stored["rows"][row.id]["seeds"].values())
  assert runner.judge_row(row, records).category in ("meets", "beats", "unexplained", "misses")
  assert runner.complete(row, records)
  assert info["check"]["metrics"]["loss"] == pytest.approx(
      info["result"]["metrics"]["test_loss"], rel=2e-3)


def test_released_models_are_small():
  total = sum(os.path.getsize(os.path.join(zoo.MODELS_DIR, n, f))
              for n in zoo.names() for f in os.listdir(os.path.join(zoo.MODELS_DIR, n)))
  assert total < 25 * 2**20


def _data_overrides(c, tfds_dir):
  return {"task.options.tfds_dir": tfds_dir} if "tfds_dir" in c.task.options else {}


def test_release_writes_a_card_whose_check_reproduces(tmp_path, monkeypatch):
  """A tiny copy run released into a temporary zoo loads and re-evaluates to its card."""
  from lvf_jax import train
  table = rows.get("lvf-t4")
  row = table.row("copy-lvf")
  c = harness.row_config(row, steps=3)
  c.task.options.T = 10
  c.model.hidden = 8
  c.train.eval_every = 3
  c.train.plot = False
  run_dir = tmp_path / "run"
  train.train_and_evaluate(c, str(run_dir))
  monkeypatch.setattr(zoo, "MODELS_DIR", str(tmp_path / "zoo"))
  result = {"metrics": {"test_loss": 1.0}, "parameters": 1, "steps": 3,
            "best_validation_step": 3, "command": "cmd", "commit": "c", "machine": "m",
            "date": "d"}
  zoo.release("tiny", str(run_dir), info=dict(
      model="lvfRNN", task="copy", paper=row.paper, paper_citation=table.citation,
      table=table.id, table_number=table.number, row=row.id, config=row.config,
      data="synthetic", result=result), check_overrides={"train.eval_size": 16})
  assert zoo.names() == ["tiny"]
  card = zoo.card("tiny")
  assert card["check"]["metrics"] == pytest.approx(zoo.evaluate("tiny"))
  model, variables, config = zoo.load("tiny")
  assert config.model.hidden == 8
  x = np.zeros((2, 30, 10), np.float32)
  assert model.apply(variables, x).shape[:2] == (2, 30)
  assert "# tiny" in (tmp_path / "zoo" / "tiny" / "README.md").read_text()


def test_run_lock_skips_a_live_holder_and_takes_over_a_dead_one(tmp_path):
  import subprocess
  import sys
  live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  try:
    (tmp_path / harness.LOCK).write_text(str(live.pid))
    assert harness._lock(str(tmp_path)) == live.pid  # pylint: disable=protected-access
    (tmp_path / harness.LOCK).write_text(str(dead.pid))
    assert harness._lock(str(tmp_path)) is None  # pylint: disable=protected-access
    assert (tmp_path / harness.LOCK).read_text() == str(os.getpid())
  finally:
    live.kill()
    live.wait()


@pytest.mark.parametrize("spec,changed", [
    ("copy.py", {("model", "cell", "div_penalty"), ("optim", "learning_rate"),
                 ("optim", "lr_vector_field"), ("optim", "clip_norm"),
                 ("optim", "lr_schedule")}),
    ("jsb.py", {("optim", "lr_vector_field")}),
    ("musedata.py", {("optim", "lr_vector_field")}),
    ("ptb_char.py", {("optim", "lr_vector_field")}),
])
def test_lvf_presets_differ_from_table5_only_where_documented(spec, changed):
  """The reproducing preset and its literal twin (lvfRNN Table 5) differ in the listed
  fields only, and the literal twin trains the vector field at the common rate."""
  def flat(c, prefix=()):
    out = {}
    for k, v in c.items():
      if hasattr(v, "items"):
        out.update(flat(v, prefix + (k,)))
      else:
        out[prefix + (k,)] = v
    return out
  ours = flat(harness.load_config(f"{spec}:lvf").to_dict())
  literal = flat(harness.load_config(f"{spec}:lvf_literal").to_dict())
  diff = {k for k in set(ours) | set(literal) if ours.get(k) != literal.get(k)}
  assert diff == changed
  assert literal.get(("optim", "lr_vector_field")) in (None, literal[("optim", "learning_rate")])
  assert literal[("model", "name")] == ours[("model", "name")] == "lvf"


def small_copy_rows(monkeypatch, log_every: int) -> None:
  """Makes the harness train the copy rows small (T 10, 8 units) at commit ``abc1234``."""
  real = harness.row_config

  def small(*args, **kwargs):
    c = real(*args, **kwargs)
    c.task.options.T = 10
    c.model.hidden = 8
    c.train.log_every = log_every
    c.train.eval_size = 16
    c.train.plot = False
    return c

  monkeypatch.setattr(runner, "row_config", small)
  monkeypatch.setenv("LVF_JAX_COMMIT", "abc1234")
  monkeypatch.setattr(provenance, "_STARTED_AT_COMMIT", [])  # asked afresh in this test


def test_a_time_limited_run_counts_its_steps_and_resumes_to_the_budget(tmp_path, monkeypatch):
  """``--time-limit``: the result of the stopped part counts the steps it reached (the page
  shows the fraction), and the next invocation resumes to the full budget."""
  table = rows.get("lvf-t4")
  row = table.row("copy-rnn")
  small_copy_rows(monkeypatch, log_every=2)
  work = tmp_path / "runs"
  part = harness.run_row(table, row, str(work), steps=6, time_limit=1e-9, log=lambda *_: None)
  assert part["steps"] == 2 and part["commit"] == "abc1234" and part["budget_steps"] == 6
  page = harness.write_table(table, str(work), str(tmp_path / "pages"))
  assert "2 of" in open(page).read()
  rest = harness.run_row(table, row, str(work), steps=6, log=lambda *_: None)
  assert rest["steps"] == 6 and rest["resumed_from"] == 2 and rest["wall_complete"]
  assert rest["wall_seconds"] >= part["wall_seconds"]


def test_a_part_killed_before_its_result_leaves_the_wall_time_incomplete():
  """The result of a resumed run sums the wall time of the parts that recorded one; when
  the previous result ends before the step the run resumed from, a killed part trained the
  steps between and the sum misses it (and every later sum does too)."""
  ok = {"steps": 2, "wall_complete": True}
  assert harness.wall_covers_run(None, None) and harness.wall_covers_run(0, ok)
  assert harness.wall_covers_run(2, ok)
  assert not harness.wall_covers_run(4, ok)  # the part from 2 to 4 was killed
  assert not harness.wall_covers_run(2, None)
  assert not harness.wall_covers_run(6, {"steps": 6, "wall_complete": False})
  assert harness.wall_covers_run(2, {"steps": 2})  # a result without the field


def _piece_nll_numpy(model, variables, batches, chain):
  """``(nll, frames, max_notes, floor)`` of every piece with a frame, each run through the
  model alone and unpadded, the NLL per frame from the logits in float64 (Bernoulli over 88
  keys), ``floor`` that of the Markov chain ``chain = (p(on | on), p(on | off))``."""
  nll, frames, notes, floor = [], [], [], []
  for b in batches:
    for x, y, m in zip(np.asarray(b["inputs"]), np.asarray(b["targets"]), np.asarray(b["mask"])):
      t = int(m.sum())
      if not t:
        continue
      z = np.asarray(model.apply(variables, x[None, :t]), np.float64)[0]
      # -[y log s(z) + (1 - y) log(1 - s(z))] = softplus(z) - y z
      nll.append(float((np.logaddexp(0.0, z) - y[:t] * z).sum() / t))
      frames.append(t)
      notes.append(int(y[:t].sum(axis=-1).max()))
      p = np.where(x[:t] == 1, chain[0], chain[1])
      floor.append(float(-np.where(y[:t] == 1, np.log(p), np.log(1 - p)).sum() / t))
  return np.array(nll), frames, notes, np.array(floor)


def _markov_chain(rolls):
  """``(p(on | on), p(on | off))`` per key counted over the transitions of ``rolls``, one
  pseudo-count per transition."""
  prev = np.concatenate([r[:-1] for r in rolls]).astype(bool)
  nxt = np.concatenate([r[1:] for r in rolls]).astype(bool)
  return ((np.sum(prev & nxt, 0) + 1) / (np.sum(prev, 0) + 2),
          (np.sum(~prev & nxt, 0) + 1) / (np.sum(~prev, 0) + 2))


@needs_data
def test_the_per_piece_nll_of_a_music_row_is_each_test_piece_alone(tmp_path, tfds_dir,
                                                                    monkeypatch):
  monkeypatch.setenv(paths.TFDS_DIR_ENV, tfds_dir)
  work, out = tmp_path / "runs", tmp_path / "pages"
  row = rows.get("lvf-t3").row("musedata-nnrnn-lr-orth")
  assert "piece_nll" in row.diagnostics
  assert cli.main(["lvf-t3", "--rows", row.id, "--smoke", "--workdir", str(work),
                   "--out", str(out)]) == 0
  run_dir = work / "lvf-t3" / row.id / "seed0"
  result = json.loads((run_dir / harness.RESULT).read_text())
  got = result["diagnostics"]["piece_nll"]
  model, variables, c = zoo.load_run(str(run_dir))
  pipeline = builders.build_pipeline(c)
  train = readers.read_music(readers.music_source_file(RAW, "musedata"))["train"]
  nll, frames, notes, floor = _piece_nll_numpy(model, variables, pipeline.eval_batches("test"),
                                               _markov_chain(train))
  order = np.argsort(-nll, kind="stable")
  assert got["split"] == "test" and got["pieces"] == len(nll) >= 3
  # float32 logits of a 24-step chain with padding to the batch's length against the piece
  # alone: each piece's NLL sums 24 x 88 terms of those logits, within F32_LONG's 40,000
  assert got["median"] == pytest.approx(np.median(nll), rel=tol.F32_LONG["rtol"])
  assert got["mean"] == pytest.approx(result["metrics"]["test_nll_per_sequence"],
                                      rel=tol.F32_LONG["rtol"])
  assert [p["index"] for p in got["worst"]] == list(order[:2])
  for p in got["worst"]:
    assert p["nll"] == pytest.approx(nll[p["index"]], rel=tol.F32_LONG["rtol"])
    assert (p["frames"], p["max_notes"]) == (frames[p["index"]], notes[p["index"]])
    # float64 sums of 24 x 88 terms: far inside 1e-9
    assert p["floor"] == pytest.approx(floor[p["index"]], rel=1e-9)
  assert got["floor_median"] == pytest.approx(np.median(floor), rel=1e-9)
  assert got["mean_without_worst"] == pytest.approx(nll[order[2:]].mean(), rel=tol.F32_LONG["rtol"])
  cell = diagnostics.cell("piece_nll", got)
  assert cell.startswith(f"median {got['median']:.3g} of {len(nll)} (floor "
                         f"{np.median(floor):.3g}); worst ")
  page = (out / "lvf-t3.md").read_text()
  assert "| per piece |" in page and f"| {row.id} | 0 | 2 | {cell} |" in page
  assert "| jsb-rnn |" not in page.split("## Diagnostics")[1]  # names no measurement
  with pytest.raises(ValueError, match="worst must be >= 0"):
    diagnostics.piece_nll(str(run_dir), worst=-1)


@needs_data
def test_reevaluate_adds_a_missing_metric_and_keeps_the_recorded_figures(tmp_path, tfds_dir,
                                                                         monkeypatch):
  monkeypatch.setenv(paths.TFDS_DIR_ENV, tfds_dir)
  work, out = tmp_path / "runs", tmp_path / "pages"
  argv = ["lvf-t3", "--rows", "jsb-rnn", "--seeds", "1", "--smoke", "--workdir", str(work),
          "--out", str(out)]
  assert cli.main(argv) == 0
  run_dir = work / "lvf-t3" / "jsb-rnn" / "seed0"
  fresh = json.loads((run_dir / harness.RESULT).read_text())
  measured = zoo.evaluate_run(str(run_dir))
  # two float32 evaluations of the smoke test split: 4 pieces x 24 frames x 88 keys summed,
  # each logit a 24-step chain of (hidden + 88)-term products, within 40,000 terms
  assert fresh["metrics"]["test_nll_per_sequence"] == pytest.approx(
      measured["nll_per_sequence"], rel=tol.F32_LONG["rtol"])
  assert fresh["metrics"]["test_loss"] == pytest.approx(measured["loss"],
                                                        rel=tol.F32_LONG["rtol"])
  # a run recorded before the metric existed
  summary = json.loads((run_dir / "summary.json").read_text())
  del summary["test_at_best_validation"]["nll_per_sequence"]
  (run_dir / "summary.json").write_text(json.dumps(summary))
  old = {**fresh, "metrics": {k: v for k, v in fresh["metrics"].items()
                              if k != "test_nll_per_sequence"}}
  (run_dir / harness.RESULT).write_text(json.dumps(old))
  assert cli.main(argv[:-4] + ["--workdir", str(work), "--out", str(out), "--reevaluate"]) == 0
  again = json.loads((run_dir / harness.RESULT).read_text())
  assert again["metrics"] == pytest.approx(fresh["metrics"])
  assert again["reevaluated"]["keys"] == ["nll_per_sequence"]
  assert again["steps"] == fresh["steps"] and again["commit"] == fresh["commit"]
  line = next(l for l in (out / "lvf-t3.md").read_text().splitlines()
              if "| test_nll_per_sequence |" in l)
  assert harness.summarize([measured["nll_per_sequence"]], "test_nll_per_sequence") in line
  assert f"{fresh['commit']} (re-evaluated at {again['reevaluated']['commit']})" in (
      out / "lvf-t3.md").read_text()
  # a recorded loss the current code does not reproduce is left alone
  summary = json.loads((run_dir / "summary.json").read_text())
  summary["test_at_best_validation"] = {"loss": 2.0 * measured["loss"]}
  (run_dir / "summary.json").write_text(json.dumps(summary))
  logs = []
  assert harness.reevaluate_row(rows.get("lvf-t3"), rows.get("lvf-t3").row("jsb-rnn"),
                                str(work), log=logs.append) == []
  assert "differs from the recorded" in logs[0]
  assert not (run_dir / harness.LOCK).exists()
  # a live holder of the run's lock is left alone; a lock left by a dead process is not
  (run_dir / harness.LOCK).write_text(str(os.getppid()))
  logs = []
  assert harness.reevaluate_row(rows.get("lvf-t3"), rows.get("lvf-t3").row("jsb-rnn"),
                                str(work), log=logs.append) == []
  assert f"being run by process {os.getppid()}" in logs[0]
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  (run_dir / harness.LOCK).write_text(str(dead.pid))
  logs = []
  harness.reevaluate_row(rows.get("lvf-t3"), rows.get("lvf-t3").row("jsb-rnn"), str(work),
                         log=logs.append)
  assert "differs from the recorded" in logs[0]
  assert not (run_dir / harness.LOCK).exists()


def test_load_run_names_the_missing_file(tmp_path):
  (tmp_path / "config.json").write_text("{}")
  with pytest.raises(ValueError, match="'run_dir'.*has no best_variables.msgpack"):
    zoo.load_run(str(tmp_path))
  with pytest.raises(ValueError, match="evaluate_run.*config.json or best_variables"):
    zoo.evaluate_run(str(tmp_path / "nothing"))


DOCS = os.path.join(runner.ROOT, "docs", "reproduction")


@pytest.mark.parametrize("table_id", sorted(rows.tables(studies=True)))
def test_the_committed_pages_are_their_records_pages(table_id, tmp_path):
  """Each committed page is what its archived records alone give (an empty runs folder)."""
  table = rows.get(table_id)
  figure = os.path.join(DOCS, f"{table_id}.png")
  text = pages.table_markdown(table, str(tmp_path), figure if os.path.exists(figure) else None,
                              archive.load(archive.path_for(DOCS, table_id)))
  with open(os.path.join(DOCS, f"{table_id}.md")) as f:
    assert f.read() == text


def test_the_committed_index_is_the_index_of_the_records(tmp_path):
  """docs/reproduction/README.md (every table's verdict counts) from the archives alone."""
  out = tmp_path / "pages"
  shutil.copytree(os.path.join(DOCS, "results"), out / "results")
  index = pages.write_index(rows.tables(studies=True), str(tmp_path / "runs"), str(out))
  with open(os.path.join(DOCS, "README.md")) as f:
    assert f.read() == open(index).read()
