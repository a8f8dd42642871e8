"""Renamed public names: the old ones warn and lead to the new ones for one release."""

import importlib

import pytest

from lvf_jax import data, train
from lvf_jax.train import builders, model_builder
from lvf_jax.train.model_builder import ModelHead


@pytest.mark.parametrize("package,old,new", [
    ("lvf_jax.train", "pipeline", "lvf_jax.train.task_pipeline"),
    ("lvf_jax.train", "pipelines", "lvf_jax.train.dataset_pipelines"),
    ("lvf_jax.data", "pipeline", "lvf_jax.data.datasets"),
    ("lvf_jax.data", "builders", "lvf_jax.data.tfds_builders"),
])
def test_a_renamed_module_warns_and_is_the_new_one(package, old, new):
  with pytest.warns(DeprecationWarning, match=f"{package}.{old} is deprecated"):
    module = getattr(importlib.import_module(package), old)
  assert module is importlib.import_module(new)


def test_data_prepare_warns_and_is_download_and_prepare():
  with pytest.warns(DeprecationWarning, match="lvf_jax.data.prepare is deprecated"):
    assert data.prepare is data.download_and_prepare


def test_an_unknown_name_is_still_an_attribute_error():
  for module in (data, train):
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
      getattr(module, "nope")


def _tiny_copy():
  c = train.base_config()
  c.task.options = {"T": 5}
  c.model.name, c.model.hidden = "rnn", 4
  return c


def test_the_model_is_built_from_the_head_a_pipeline_asks_for():
  c = _tiny_copy()
  pipeline = builders.build_pipeline(c)
  head = pipeline.model_head()
  assert head == ModelHead("per_step", pipeline.output_size)
  for given in (head, pipeline):  # a pipeline stands for its head
    model = builders.build_model(c, given)
    assert type(model).__name__ == "SequencePredictor" and model.num_outputs == head.num_outputs
  last = builders.build_model(c, ModelHead("last_state", 3))
  assert type(last).__name__ == "SequenceClassifier" and last.num_outputs == 3
  with pytest.raises(ValueError, match=r"'head.kind' must be one of \['per_step', 'last_state'\]"):
    model_builder.build_model(c, ModelHead("every_other_step", 3))


def test_pipeline_build_model_is_deprecated_and_builds_the_same_model():
  c = _tiny_copy()
  pipeline = builders.build_pipeline(c)
  with pytest.warns(DeprecationWarning, match="Pipeline.build_model is deprecated"):
    old = pipeline.build_model(c)
  assert old == builders.build_model(c, pipeline.model_head())
