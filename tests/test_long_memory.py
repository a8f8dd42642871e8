"""The long-memory study as tables of the reproduction harness
(``experiments/reproduce/tables/long_memory.py``): every row's config builds, a row runs
through the harness's command line, the runner's diagnostics agree with an independent
computation, and the committed pages are their records' pages."""

import dataclasses
import json
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.reproduce import __main__ as cli
from experiments.reproduce import archive, diagnostics, pages, presets, rows, runner
from experiments.reproduce import verdict as verdict_lib
from experiments.reproduce.tables import long_memory
from lvf_jax import tasks, train, zoo
from lvf_jax.train import builders
import tolerances as tol

STUDY = ("long-memory-copy", "long-memory-adding")
DOCS = os.path.join(runner.ROOT, "docs", "reproduction")


def _rows():
  return [(t, r) for t in STUDY for r in rows.get(t).rows]


def test_the_study_tables_are_the_harness_s_but_no_paper_s():
  assert not set(STUDY) & set(rows.tables())  # the papers' tables alone
  assert set(STUDY) <= set(rows.tables(studies=True))
  for table_id in STUDY:
    table = rows.get(table_id)
    assert table.study == table_id and table.heading == table.citation
    assert all(r.paper == {} and r.diagnostics for r in table.rows)
  ids = {f"{t.split('-')[-1]}-{r.id}" for t, r in _rows()}
  assert {"copy-t2000-lvf-nonneg-bias", "adding-t10000-ncgru",
          "adding-t5000-lvf-small-input"} <= ids and len(ids) == 23


@pytest.mark.parametrize("table_id,row_id", [(t, r.id) for t, r in _rows()])
def test_every_row_config_validates(table_id, row_id):
  row = rows.get(table_id).row(row_id)
  c = runner.row_config(row)
  train.validate_config(c)
  assert c.task.options.T == row.overrides["task.options.T"] and c.train.steps == row.steps
  assert c.model.segment_length == "auto" and c.train.eval_size == 256
  assert c.train.checkpoint_every == c.train.eval_every
  diagnostics.check(row.diagnostics)
  assert ("memory_probe" in row.diagnostics) == (c.task.name == "adding")
  if c.model.name == "lvf":  # the divergence-free modReLU cell, on copy and on adding
    assert c.model.cell.divergence_free is True and c.model.cell.activation == "modrelu"


def _tiny(target: float):
  """A study table of one adding lvfRNN row at T = 12, 4 steps, evaluated every 2."""
  row = long_memory.make_row("adding", 12, 4, "lvf", steps=4, eval_every=2,
                             overrides=long_memory.ADDING_LVF)
  row = dataclasses.replace(row, diagnostics={**row.diagnostics,
                                              "target_reached": {"target": target}})
  table = rows.Table("long-memory", "", "tiny", "a tiny study", (row,), study="lm-tiny")
  return table, row


def _explicit_last_states(cell, params, x, start: int = 0, h0=None):
  """``h_T`` of the cell's own steps in a Python loop from step ``start`` (state ``h0``,
  the initial carry when None)."""
  def prepare(c):
    return c.prepare(), c.project_inputs(jnp.moveaxis(x, -2, 0))
  prep, u = cell.apply({"params": params}, method=prepare)
  h = cell.initialize_carry(jax.random.key(0), x.shape[:1] + x.shape[-1:]) if h0 is None else h0
  for t in range(start, x.shape[1]):
    h, _ = cell.step(prep, h, u[t])
  return h


def test_a_tiny_row_records_its_diagnostics_and_they_hold(tmp_path):
  table, row = _tiny(target=1e9)  # reached at the first evaluation
  work = str(tmp_path / "runs")
  result = runner.run_row(table, row, work, log=lambda *_: None)
  d = result["diagnostics"]
  assert result["steps"] == 4 and d["target_reached"] == {"target": 1e9, "step": 2}
  run_dir = runner.row_dir(table, row, work, 0)
  assert diagnostics.target_reached(run_dir, target=0.0) == {"target": 0.0, "step": None}
  # dh_T/dh_1 against forward-mode differentiation of the cell's steps in a Python loop
  model, variables, c = zoo.load_run(run_dir)
  cell, params = model.cells[0], variables["params"]["rnn"]["layer_0"]["cell"]
  task = builders.build_pipeline(c).task
  x = jnp.asarray(task.fixed_split("validation", 2).inputs)
  h1 = _explicit_last_states(cell, params, x[:, :1])
  jac = jax.jacfwd(lambda h: _explicit_last_states(cell, params, x, start=1, h0=h))(h1)
  per_seq = [float(jnp.linalg.norm(jac[b, :, b, :])) for b in range(x.shape[0])]
  n = h1.shape[-1]
  # float32 Jacobians of T = 12 steps at width n, two ways: T n well within 40,000 terms
  assert d["gradient_reach"] == pytest.approx(np.mean(per_seq) / math.sqrt(n),
                                              rel=tol.F32_LONG["rtol"])
  # the memory probe's last states are the loop's; its capacity is a sum of R^2 <= n
  xt = np.asarray(task.fixed_split("test", 5).inputs)
  # float32, the fused scan against the loop: T = 12 steps at width n
  np.testing.assert_allclose(diagnostics.last_states(cell, params, xt, chunk=2),
                             _explicit_last_states(cell, params, jnp.asarray(xt)),
                             **tol.F32_LONG)
  probe = d["memory_probe"]
  assert probe["n"] == n and 0.0 <= probe["capacity"] <= n + 1e-3
  assert set(probe["lags"]) == {"1", "10"} and all(0 <= v <= 1 for v in probe["lags"].values())
  # a finished seed whose record lacks a measurement gets it when the row runs again
  path = os.path.join(run_dir, runner.RESULT)
  with open(path) as f:
    stripped = json.load(f)
  stripped["diagnostics"] = {"target_reached": d["target_reached"]}
  runner.write_result(run_dir, stripped)
  again = runner.run_row(table, row, work, log=lambda *_: None)
  assert again["diagnostics"]["gradient_reach"] == pytest.approx(d["gradient_reach"])
  assert runner.read_result(run_dir)["diagnostics"]["memory_probe"] == probe
  # the page shows them from the archived record, the same without the runs
  out = str(tmp_path / "pages")
  page = open(pages.write_table(table, work, out)).read()
  assert "## Diagnostics" in page and "| target reached at | dh_T/dh_1 | h_T memory |" in page
  assert f"| {row.id} | 0 | 4 | 2 | {d['gradient_reach']:.3g} | " in page
  assert diagnostics.cell("memory_probe", probe) in page
  assert open(pages.write_table(table, str(tmp_path / "none"), out)).read() == page


def test_the_batch_minimum_is_the_smallest_batch_mean_of_the_squared_errors(tmp_path):
  table, row = _tiny(target=1e9)
  row = dataclasses.replace(row, diagnostics={"batch_minimum": {"size": 20, "batch": 5}})
  table = dataclasses.replace(table, rows=(row,))
  work = str(tmp_path / "runs")
  got = runner.run_row(table, row, work, log=lambda *_: None)["diagnostics"]["batch_minimum"]
  # NumPy of the adding loss (squared error of the last output) on the same 20 sequences
  model, variables, c = zoo.load_run(runner.row_dir(table, row, work, 0))
  split = builders.build_pipeline(c).task.fixed_split("validation", 20)
  out = np.asarray(model.apply(variables, split.inputs), np.float64)[:, -1, 0]
  sq = (out - np.asarray(split.targets, np.float64)) ** 2
  means = sq.reshape(4, 5).mean(axis=1)
  assert got["size"] == 20 and got["batch"] == 5
  # float32 forward passes of T = 12 steps, batches of 5 against one of 20: outputs agree to
  # about T n eps32 relative, far inside 1e-4
  assert got["loss"] == pytest.approx(sq.mean(), rel=1e-4)
  assert got["min"] == pytest.approx(means.min(), rel=1e-4)
  # each batch mean within 1e-4 of the loss (above): their spread within twice that
  assert got["std"] == pytest.approx(means.std(ddof=1), abs=2e-4 * sq.mean())
  assert diagnostics.cell("batch_minimum", got).endswith("(20 sequences, batches of 5)")
  assert got["min"] < got["loss"]  # four different batches: one is below their mean
  with pytest.raises(ValueError, match="multiple of batch"):
    diagnostics.batch_minimum(runner.row_dir(table, row, work, 0), size=20, batch=3)


def test_after_update_replays_the_run_and_reads_each_batch_after_its_own_update(tmp_path):
  from lvf_jax.train import checkpoints, loop  # pylint: disable=g-import-not-at-top
  table, row = _tiny(target=1e9)
  row = dataclasses.replace(row, diagnostics={"after_update": {"steps": 2}},
                            overrides={**row.overrides, "train.log_every": 1})
  table = dataclasses.replace(table, rows=(row,))
  work = str(tmp_path / "runs")
  got = runner.run_row(table, row, work, log=lambda *_: None)["diagnostics"]["after_update"]
  run_dir = runner.row_dir(table, row, work, 0)
  _, _, c = zoo.load_run(run_dir)
  ckpt_dir = os.path.join(run_dir, "checkpoints")
  start, before, after = diagnostics._replay(c, ckpt_dir, 2)  # pylint: disable=protected-access
  # checkpoints at the evaluations (steps 2 and 4): the replay is the run's steps 3 and 4
  assert start == got["from_step"] == 2 and got["steps"] == 2
  assert got["before"] == pytest.approx(np.mean(before), rel=1e-6)  # float64 means of float32
  assert got["ratio"] == pytest.approx(np.mean(np.divide(after, before)), rel=1e-6)
  # the same jitted float32 step on the run's own batch and state: the logged losses again,
  # up to XLA's reassociation between two compilations of one step (a few eps32)
  assert got["replay_error"] is not None and got["replay_error"] < 1e-5
  # independently: step 3's batch (drawn as the run draws it) under the parameters the run
  # saved at step 4, through the model and the task's loss
  pipeline = builders.build_pipeline(c)
  model = builders.build_model(c, pipeline.model_head())
  tx = builders.build_optimizer(c)
  ckpt = checkpoints.Checkpointer(ckpt_dir)
  state = ckpt.restore(loop.initial_state(c, model, pipeline, tx), 4)
  ckpt.close()
  batch = pipeline.train_batch(jax.random.wrap_key_data(state.data_key), 3)
  outputs = model.apply({"params": state.params, **state.extras}, batch.inputs)
  # one float32 forward pass of T = 12 steps, jitted and not: T n eps32 relative
  assert after[-1] == pytest.approx(float(pipeline.task.loss(outputs, batch)), rel=1e-4)
  assert diagnostics.cell("after_update", got).endswith("(2 steps from 2)")
  with pytest.raises(ValueError, match="steps must be >= 1"):
    diagnostics.after_update(run_dir, steps=0)


def test_a_row_runs_through_the_harness_command_line(tmp_path):
  work, out = tmp_path / "runs", tmp_path / "pages"
  assert cli.main(["long-memory-adding", "--rows", "t1000-lstm", "--smoke", "--workdir",
                   str(work), "--out", str(out)]) == 0
  result = json.loads((work / "long-memory-adding" / "t1000-lstm" / "seed0" /
                       runner.RESULT).read_text())
  assert result["smoke"] and result["steps"] == 2
  assert set(result["diagnostics"]) == {"target_reached", "gradient_reach", "memory_probe"}
  assert result["diagnostics"]["memory_probe"]["n"] == 68
  page = (out / "long-memory-adding.md").read_text()
  assert "| adding T=1000 | LSTM | val_loss |" in page and "| t1000-lstm | 0 | 2 |" in page
  assert "| adding T=5000 | NC-GRU | val_loss |" in page and "**not run: queued" in page
  assert "[long-memory-adding](long-memory-adding.md)" in (out / "README.md").read_text()


def _record(loss: float, steps: int = 10) -> dict:
  return {"seed": 0, "steps": steps, "metrics": {"val_loss": loss, "test_loss": loss}}


def test_a_study_row_is_judged_against_its_floor_alone():
  table = rows.get("long-memory-adding")
  row = table.row("t1000-ncgru")
  floors = runner.row_floors(row, [])
  floor = floors["val_loss"][0]
  # each split's own no-memory MSE: predicting 1 on the very sequences a run is judged on
  config = presets.preset_config(row)
  task, size = tasks.AddingTask(**config.task.options), int(config.train.eval_size)
  for metric, split in (("val_loss", "validation"), ("test_loss", "test")):
    targets = np.asarray(task.fixed_split(split, size).targets, np.float64)
    # a float32 mean of `size` squares against float64
    assert floors[metric][0] == pytest.approx(np.mean((targets - 1.0) ** 2),
                                              rel=tol.probabilistic(size))
  assert pages.row_verdict(table, row, []).category == verdict_lib.NOT_RUN
  full = row.steps
  assert pages.row_verdict(table, row, [_record(floor, full)]).category == verdict_lib.AT_FLOOR
  assert pages.row_verdict(table, row, [_record(5.0, full)]).category == verdict_lib.AT_FLOOR
  assert pages.row_verdict(table, row, [_record(1e-4, full)]).category == ""
  # short of the budget: partial, and whether the run so far is at its floor
  short = pages.row_verdict(table, row, [_record(5.0, full - 1)])
  assert (short.category, short.so_far) == (verdict_lib.PARTIAL, verdict_lib.AT_FLOOR_SO_FAR)
  assert pages.verdict_cell(short) == "partial (at floor so far)"
  learned = pages.row_verdict(table, row, [_record(1e-4, full - 1)])
  assert (learned.category, learned.so_far) == (verdict_lib.PARTIAL, "")
  smoke = {**_record(1e-4), "smoke": True}  # a smoke record is no run
  assert pages.row_verdict(table, row, [smoke]).category == verdict_lib.NOT_RUN


@pytest.mark.parametrize("table_id", STUDY)
def test_the_committed_records_carry_their_rows_diagnostics_unless_stopped_early(table_id):
  """The study's archived records (their pages are checked against them in
  test_reproduce.py, with every table's). A run stopped by a signal keeps its partial
  record without measurements (the runner takes them when the run resumes); every other
  record carries exactly its row's."""
  table = rows.get(table_id)
  stored = archive.load(archive.path_for(DOCS, table_id))
  assert set(stored["rows"]) <= {r.id for r in table.rows}
  for entry in stored["rows"].values():
    for record in entry["seeds"].values():
      assert not record["smoke"] and record["table"] == table_id
      if "diagnostics" not in record:
        assert record["steps"] < record["budget_steps"], record["row"]
        continue
      assert set(record["diagnostics"]) == set(table.row(record["row"]).diagnostics)
