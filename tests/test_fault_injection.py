"""Fault injection (``experiments/fault_injection.py``) at a size for the default suite: kill
the CLI 4 times (10 in the slow suite), stop it by SIGTERM 3 times (10), damage every kind of raw data file, poison the loss;
damage every kind of checkpoint file (slow suite; the default suite damages the newest
checkpoint in ``tests/test_train.py``)."""

import signal

import pytest

from experiments import fault_injection as faults


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  """An uninterrupted CLI run of ``faults.RUN_ARGS``."""
  root = tmp_path_factory.mktemp("faults")
  workdir = str(root / "reference")
  result = faults.run(workdir)
  assert result.returncode == 0, result.stderr[-2000:]
  return workdir


@pytest.mark.parametrize("kills", [4, pytest.param(10, marks=pytest.mark.slow)])
def test_kills_at_random_moments_resume_to_the_uninterrupted_run(tmp_path, reference, kills):
  r = faults.kill_trials(str(tmp_path), kills=kills, seed=1, reference=reference)
  assert r["trials"] == kills and r["survived"] == kills and r["lost"] == 0, r
  assert r["identical_to_uninterrupted"], r
  assert any(step > 0 for step in r["signalled_after_step"]), r  # killed while training


@pytest.mark.parametrize("terms", [3, pytest.param(10, marks=pytest.mark.slow)])
def test_sigterm_at_random_moments_stops_checkpointed_and_resumes_to_the_same_run(
    tmp_path, reference, terms):
  r = faults.kill_trials(str(tmp_path), kills=terms, seed=3, reference=reference,
                         signum=signal.SIGTERM)
  assert r["trials"] == terms and r["survived"] == terms and r["lost"] == 0, r
  assert r["steps_redone"] == 0 and r["identical_to_uninterrupted"], r
  assert any(step > 0 for step in r["signalled_after_step"]), r


@pytest.mark.slow
def test_every_kind_of_damaged_checkpoint_file_falls_back_or_restores_intact(tmp_path,
                                                                              reference):
  r = faults.checkpoint_trials(str(tmp_path), reference, one_per_kind=True)
  assert r["trials"] >= 16 and r["lost"] == 0, r["failures"]
  assert r["fell_back"] >= 2, r  # a damaged array file is found and moved aside


def test_every_kind_of_damaged_raw_data_file_is_a_one_line_data_error(tmp_path):
  r = faults.data_trials(str(tmp_path))
  if not r["trials"]:
    pytest.skip("no raw data files in the data directory")
  assert r["lost"] == 0, r["failures"]


def test_a_nan_loss_stops_at_its_step_and_keeps_only_earlier_checkpoints(tmp_path):
  r = faults.nan_trials(str(tmp_path), trials=3, seed=2)
  assert r["lost"] == 0, r["failures"]
