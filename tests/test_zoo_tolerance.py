"""The released models' check tolerances: derived from rounding, and able to fail."""

import jax
import numpy as np

from lvf_jax import zoo
import tolerances as tol

# A synthetic-task model: its evaluation needs no data set.
SYNTHETIC = "ncgru-t3-adding-scornn-t400"


def _evaluation(name):
  info = zoo.card(name)["check"]
  c = zoo.config(name)
  zoo._set_fields(c, info["overrides"])
  variables = zoo._variables(zoo.os.path.join(zoo._dir(name), zoo.VARIABLES))
  return c, variables, info["split"]


def test_every_card_states_a_tolerance_for_each_checked_metric():
  for name in zoo.names():
    check = zoo.card(name)["check"]
    assert set(check["tolerance"]) >= set(check["metrics"]), name
    assert all(0 <= t < 0.5 for t in check["tolerance"].values()), name


def test_perturbation_changes_each_float_entry_by_eps_and_keeps_dtypes():
  variables = {"params": {"w": np.full((3, 4), 2.0, np.float32),
                          "steps": np.arange(3, dtype=np.int32)}}
  out = zoo._perturbed(variables, 1e-3, np.random.default_rng(0))
  assert out["params"]["w"].dtype == np.float32
  # float32 rounding of 2 (1 +- 1e-3): at most half an ulp of 2, EPS32 (9.3e-8 here); the
  # subtraction from 2 is exact
  np.testing.assert_allclose(np.abs(out["params"]["w"] - 2.0), 2e-3, atol=2 * tol.EPS32)
  np.testing.assert_array_equal(out["params"]["steps"], variables["params"]["steps"])


def test_tolerance_is_what_rounding_can_do_and_a_model_that_learned_nothing_exceeds_it():
  """The tolerance is positive where a 400-step recurrence amplifies rounding, stays a few
  per cent at most, and the weights of a model that learned nothing (its initialisation)
  miss the card by far more, so the card check can fail."""
  from lvf_jax.train import builders
  c, variables, split = _evaluation(SYNTHETIC)
  tol = zoo.rounding_tolerance(c, variables, split, draws=2)
  assert 0 < tol["loss"] < 0.05
  pipeline = builders.build_pipeline(c)
  model = builders.build_model(c, pipeline.model_head())
  untrained = builders.init_variables(model, pipeline, jax.random.key(0))
  got = zoo.evaluate_variables(c, untrained, split)["loss"]
  want = zoo.card(SYNTHETIC)["check"]["metrics"]["loss"]
  assert abs(got / want - 1) > 10 * zoo.card(SYNTHETIC)["check"]["tolerance"]["loss"]


def test_refresh_rewrites_the_card_tolerance(tmp_path, monkeypatch):
  import shutil
  src = zoo._dir(SYNTHETIC)
  shutil.copytree(src, tmp_path / SYNTHETIC)
  monkeypatch.setattr(zoo, "MODELS_DIR", str(tmp_path))
  monkeypatch.setattr(zoo, "TOLERANCE_DRAWS", 1)
  card = zoo.card(SYNTHETIC)
  card["check"]["tolerance"] = {"loss": -1.0}
  zoo._write_card(str(tmp_path / SYNTHETIC), card)
  got = zoo.refresh_tolerance(SYNTHETIC)
  assert zoo.card(SYNTHETIC)["check"]["tolerance"] == got
  assert got["loss"] >= 0
