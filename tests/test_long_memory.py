"""experiments/long_memory.py: every run's config builds; a tiny run trains, resumes and
lands on the page with the step at which it reached its target."""

import json

import pytest

from experiments import long_memory
from lvf_jax import train


@pytest.mark.parametrize("run_id", ["copy-t2000-lvf", "adding-t10000-lstm", "adding-t1000-ncgru"])
def test_run_configs_validate(run_id):
  run = long_memory.RUNS[run_id]
  c = long_memory.run_config(run)
  assert c.task.options.T == run.T and c.train.batch_size == run.batch
  assert c.model.segment_length == "auto"
  train.validate_config(c)


def test_a_tiny_run_lands_on_the_page(tmp_path, monkeypatch):
  run = long_memory.Run("adding", 12, "lvf", batch=4, steps=4, eval_every=2)
  monkeypatch.setitem(long_memory.RUNS, run.id, run)
  monkeypatch.setattr(long_memory, "TARGET", 1e9)  # reached at the first evaluation
  work, page = tmp_path / "runs", tmp_path / "page.md"
  assert long_memory.main(["--runs", run.id, "--steps", "2", "--workdir", str(work),
                           "--out", str(page)]) == 0
  first = json.loads((work / run.id / "result.json").read_text())
  assert first["steps"] == 2 and first["reached_at"] == 2
  assert "| adding | 12 | lvf | 4 | 2 |" in page.read_text()  # --steps 2: its whole budget
  assert long_memory.main(["--runs", run.id, "--workdir", str(work), "--out",
                           str(page)]) == 0  # resumes to the run's own 4 steps
  result = json.loads((work / run.id / "result.json").read_text())
  assert result["steps"] == 4 and result["best_validation"] is not None
  assert 0.0 < result["gradient_reach"] < 10.0  # ||dh_T/dh_1|| / ||dh_T/dh_T|| at 12 steps
  text = page.read_text()
  assert f"| {result['gradient_reach']:.3g} |" in text
  assert "| adding | 12 | lvf | 4 | 4 |" in text and "`python -m experiments.long_memory" in text
  assert "| copy | 2000 | exprnn |" in text and "not run yet" in text
  probe = result["memory_probe"]  # what h_T holds: a capacity between 0 and n
  assert probe["n"] == 128 and 0.0 <= probe["capacity"] <= probe["n"] + 1e-3
  assert set(probe["lags"]) == {"1", "10"} and -1.0 < probe["target_r2"] <= 1.0
  assert f"| {probe['capacity']:.1f} of n = 128; target R^2" in text
  # --probe re-measures a finished run without training it
  (work / run.id / "result.json").write_text(json.dumps({**result, "memory_probe": None}))
  assert long_memory.main(["--runs", run.id, "--probe", "--workdir", str(work), "--out",
                           str(page)]) == 0
  again = json.loads((work / run.id / "result.json").read_text())
  assert again["memory_probe"] == probe and again["steps"] == 4
  assert f"| {probe['capacity']:.1f} of n = 128" in page.read_text()
  # the results are archived beside the page: written again without the runs, it is the same
  before = page.read_text()
  assert (tmp_path / "results" / "long_memory.json").exists()
  long_memory.report(str(tmp_path / "none"), str(page))
  assert page.read_text() == before


def test_a_run_known_only_as_printed_stays_on_the_page(tmp_path):
  from experiments.reproduce import archive  # pylint: disable=g-import-not-at-top
  line = "| copy | 2000 | exprnn | 16 | 20000 | 2e-06 | 1250 | as printed |"
  archive.save(archive.path_for(str(tmp_path), "long_memory"),
               {"runs": {"copy-t2000-exprnn": {"page": {"line": line}}}})
  text = open(long_memory.report(str(tmp_path / "none"), str(tmp_path / "page.md"))).read()
  assert line in text.splitlines() and "`copy-t2000-exprnn`:" in text  # with its note
  assert "| copy | 1000 | lstm | 16 | 20000 | not run yet" in text


def test_a_diverging_run_is_recorded_with_its_step(tmp_path, monkeypatch):
  run = long_memory.Run("adding", 12, "lvf", batch=4, steps=4, eval_every=2)
  monkeypatch.setitem(long_memory.RUNS, run.id, run)
  real = long_memory.run_config

  def exploding(*args, **kwargs):
    c = real(*args, **kwargs)
    c.optim.learning_rate = 1e30  # the first update overflows
    c.optim.lr_vector_field = 1e30
    c.train.log_every = 1
    return c

  monkeypatch.setattr(long_memory, "run_config", exploding)
  work, page = tmp_path / "runs", tmp_path / "page.md"
  assert long_memory.main(["--runs", run.id, "--workdir", str(work), "--out", str(page)]) == 0
  result = json.loads((work / run.id / "result.json").read_text())
  assert result["diverged"]["step"] >= 1
  assert "**diverged** at step" in page.read_text()
  assert long_memory.main(["--runs", run.id, "--workdir", str(work), "--out", str(page)]) == 0


def test_the_adding_lvf_runs_are_divergence_free_and_say_so(tmp_path):
  for t in (1000, 5000, 10000):
    run = long_memory.RUNS[f"adding-t{t}-lvf"]
    cell = long_memory.run_config(run).model.cell
    assert cell.divergence_free is True and cell.activation == "modrelu"
  assert long_memory.run_config(long_memory.RUNS["copy-t1000-exprnn"]).model.name == "exprnn"
  text = open(long_memory.report(str(tmp_path / "none"), str(tmp_path / "page.md"))).read()
  assert "| adding | 1000 | lvf (divergence_free=True, activation=modrelu) | 50 | 10000 | not run yet" in text
