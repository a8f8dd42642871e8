"""The JSB baselines study (experiments/jsb_baselines.py): every trial's config builds, a trial
runs two steps on tiny data and leaves a record, and the page is written from the records."""

import pytest

from experiments import jsb_baselines as study
from lvf_jax.data import paths
from lvf_jax.train import validate_config

RAW = paths.raw_data_dir()
NEEDS_JSB = pytest.mark.skipif(not (RAW / "polyphonic").is_dir(),
                               reason=f"shared data 'polyphonic' not found under {RAW} "
                                      f"(set {paths.DATA_DIR_ENV})")


def _get(c, dotted: str):
  for part in dotted.split("."):
    c = c[part]
  return c


@pytest.mark.parametrize("name", list(study.TRIALS))
def test_every_trial_is_its_preset_with_its_overrides(name):
  preset, _, overrides = study.TRIALS[name]
  c = study.config_for(preset, overrides, seed=0, steps=3 * study.EPOCH)
  base = study.config_for(preset, {}, seed=0, steps=3 * study.EPOCH)
  for key, value in overrides.items():
    assert _get(c, key) == value
  assert c.train.steps == 3 * study.EPOCH and c.train.eval_every == study.EPOCH
  assert c.train.seed == study.BASE_SEED and c.train.batch_size == 1
  assert c.model.hidden == base.model.hidden  # the same parameter budget as the preset
  assert study.PAPER[preset] > 0


@NEEDS_JSB
@pytest.mark.parametrize("name", list(study.TRIALS))
def test_every_trial_config_validates(name):
  preset, _, overrides = study.TRIALS[name]
  validate_config(study.config_for(preset, overrides, seed=0, steps=study.EPOCH))


@NEEDS_JSB
def test_a_trial_records_its_curves_and_the_page_reads_the_records(tmp_path):
  path = str(tmp_path / "records.json")
  records = study.run_trials(["eurnn-base"], [0], 10, str(tmp_path / "runs"), skip_done=True,
                             path=path, smoke_steps=2, log=lambda *_: None)
  record = records["eurnn-base/seed0/2"]
  assert record["steps"] == 2 and record["best_step"] == 2
  assert [s for s, _ in record["curves"]["validation"]] == [2]
  assert record["min_train_loss"] == record["curves"]["train"][0][1]
  assert record["curves"]["radius"][0][1] == pytest.approx(1.0, abs=1e-3)  # unitary W
  assert record["hidden_norm_at_best"]["max"] >= record["hidden_norm_at_best"]["mean"] > 0
  assert record["commit"] and record["machine"] and record["date"]
  assert study.load_records(path) == records
  again = study.run_trials(["eurnn-base"], [0], 10, str(tmp_path / "runs"), skip_done=True,
                           path=path, smoke_steps=2, log=lambda *_: None)
  assert again == records  # recorded: not run again
  page = tmp_path / "page.md"
  study.write_page(records, str(page))
  text = page.read_text()
  assert "| `eurnn-base` | the preset (Adam 1e-3 for every angle and weight) | 0 | 2 |" in text
  assert f"{record['test_loss']:.4g}" in text


def _archive(tmp_path, rows: dict) -> str:
  path = tmp_path / "lvf-t3.json"
  study.archive.save(str(path), {"rows": {
      row: {"seeds": {"0": {"steps": 22900, "best_validation_step": best,
                            "metrics": {"test_loss": test, "min_train_loss": 4.0},
                            "last": {"metrics": {"val_loss": 9.5}}}}}
      for row, (test, best) in rows.items()}})
  return str(path)


def test_the_tanh_rows_are_judged_against_their_models_paper_value(tmp_path):
  tol = study.verdict_lib.relative_tolerance("test_loss", study.PAPER["exprnn"],
                                             study.verdict_lib.LOG_LIKELIHOOD)
  path = _archive(tmp_path, {
      "jsb-exprnn-tanh": (study.PAPER["exprnn"] + 2 * tol, 5267),
      "jsb-nnrnn-tanh": (study.PAPER["nnrnn"] + 0.5 * tol, 1145),
      "jsb-exprnn": (9.3, 1145)})
  lines = study.full_budget_findings(path)
  assert len(lines) == 2  # only the tanh rows
  exprnn, nnrnn = lines
  assert exprnn.startswith("- `jsb-exprnn-tanh`") and "by more than the harness's" in exprnn
  assert "epoch 23" in exprnn and f"paper's {study.PAPER['exprnn']}" in exprnn
  assert "within the harness's tolerance" in nnrnn and "epoch 5," in nnrnn
  table = "\n".join(study.full_budget_lines(path))
  assert f"| jsb-exprnn-tanh (seed 0) | 22900 | {study.PAPER['exprnn'] + 2 * tol:.4g} | " \
         f"{study.PAPER['exprnn']} | 5267 (23) |" in table


def test_the_recorded_command_leaves_out_the_machines_workdir():
  from experiments.reproduce import provenance  # pylint: disable=g-import-not-at-top
  argv = ["--epochs", "30", "--workdir", "/some/where", "--trials", "a", "--workdir=/x"]
  assert provenance.command_line("experiments.jsb_baselines", argv) == (
      "python -m experiments.jsb_baselines --epochs 30 --trials a")
  trained = ["--trained", "/home/me/runs/reproduce/lvf-t4/copy-lvf/seed0", "rel/dir"]
  assert provenance.command_line("experiments.lvf_divergence", trained) == (
      "python -m experiments.lvf_divergence --trained .../lvf-t4/copy-lvf/seed0 rel/dir")
  measured = "python /work/main/benchmarks/gpu.py --json /root/out/g.json; lvf_jax from /work/main"
  assert provenance.machine_free(measured) == (
      "python .../main/benchmarks/gpu.py --json .../out/g.json; lvf_jax from .../main")


def _trial(name: str, steps: int, test: float, best: int, best_val: float, last_val: float):
  return {"trial": name, "preset": study.TRIALS[name][0], "seed": 0, "steps": steps,
          "test_loss": test, "best_step": best, "best_val_loss": best_val,
          "last_val_loss": last_val}


def test_the_readout_decay_is_set_against_its_presets_longest_trial():
  records = {"a": _trial("eurnn-readout-wd-1e-4", 2290, 9.1, 4 * study.EPOCH, 9.0, 9.2),
             "b": _trial("eurnn-base", 1374, 9.265, 2 * study.EPOCH, 9.3, 10.2),
             "c": _trial("eurnn-base", 458, 9.4, 2 * study.EPOCH, 9.3, 9.5)}
  (line,) = study.decay_findings(records)
  assert "(`eurnn-readout-wd-1e-4`, 2290 steps) against the preset (`eurnn-base`, 1374" in line
  assert "best test NLL 9.1 at epoch 4 against 9.265 at epoch 2" in line
  assert f"rose by {0.2:.3g} after its best epoch against {0.9:.3g}" in line
  assert study.standing(9.1, study.PAPER["eurnn"]) in line
  assert study.decay_findings({"b": records["b"]}) == []  # no decayed trial recorded


def test_a_row_of_one_change_says_whether_it_ran_its_full_budget(tmp_path):
  path = _archive(tmp_path, {"jsb-exprnn-lr-orth": (8.44, 4809)})
  (line,) = study.full_budget_findings(path)
  assert line.startswith("- `jsb-exprnn-lr-orth` (seed 0, 22900 steps, the full budget)")
  assert study.paper_of("jsb-exprnn-lr-orth") == study.PAPER["exprnn"]
  short = tmp_path / "short"
  short.mkdir()
  path = _archive(short, {"jsb-exprnn-lr-orth": (8.44, 4809)})
  archive = study.archive.load(path)
  archive["rows"]["jsb-exprnn-lr-orth"]["seeds"]["0"]["steps"] = 5000
  study.archive.save(path, archive)
  (line,) = study.full_budget_findings(path)
  assert f"5000 steps, short of the full {study.FULL_STEPS})" in line


def test_the_readout_decay_falls_back_to_the_presets_full_budget_row(tmp_path):
  path = _archive(tmp_path, {"jsb-exprnn": (9.325, 5 * study.EPOCH)})
  records = {"a": _trial("exprnn-readout-wd-1e-4", 2290, 9.346, 5 * study.EPOCH, 9.5, 9.75)}
  (line,) = study.decay_findings(records, path)
  assert "against the preset (the row `jsb-exprnn`, 22900 steps)" in line
  assert "best test NLL 9.346 at epoch 5 against 9.325 at epoch 5" in line
