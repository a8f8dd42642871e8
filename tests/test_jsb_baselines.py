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
