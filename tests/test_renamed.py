"""Renamed public names: the old ones warn and lead to the new ones for one release."""

import importlib
import sys

import pytest

from lvf_jax import data, train
from lvf_jax.train import builders, model_builder
from lvf_jax.train.model_builder import ModelHead


RENAMED = [
    ("lvf_jax.train", "pipeline", "lvf_jax.train.task_pipeline"),
    ("lvf_jax.train", "pipelines", "lvf_jax.train.dataset_pipelines"),
    ("lvf_jax.data", "pipeline", "lvf_jax.data.datasets"),
    ("lvf_jax.data", "builders", "lvf_jax.data.tfds_builders"),
]


def _forget(package, old):
  """Undoes an earlier import of the old name in this process (its module entry and the
  package attribute the import system binds), so each form is tried afresh."""
  sys.modules.pop(f"{package}.{old}", None)
  vars(importlib.import_module(package)).pop(old, None)


def _import_statement(package, old):
  namespace = {}
  exec(f"import {package}.{old}", namespace)  # noqa: S102
  module = namespace[package.split(".")[0]]
  for part in f"{package}.{old}".split(".")[1:]:
    module = getattr(module, part)
  return module


def _from_import(package, old):
  new_module = importlib.import_module(dict((f"{p}.{o}", n) for p, o, n in RENAMED)
                                       [f"{package}.{old}"])
  name = next(n for n in vars(new_module) if not n.startswith("_"))
  namespace = {}
  exec(f"from {package}.{old} import {name}", namespace)  # noqa: S102
  assert namespace[name] is getattr(new_module, name)
  return sys.modules[f"{package}.{old}"]


FORMS = {
    "attribute": lambda package, old: getattr(importlib.import_module(package), old),
    "import a.b.old": _import_statement,
    "from a.b.old import X": _from_import,
    "from a.b import old": lambda package, old: _from_package(package, old),
}


def _from_package(package, old):
  namespace = {}
  exec(f"from {package} import {old}", namespace)  # noqa: S102
  return namespace[old]


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("package,old,new", RENAMED)
def test_a_renamed_module_warns_and_is_the_new_one(package, old, new, form):
  _forget(package, old)
  with pytest.warns(DeprecationWarning, match=f"{package}.{old} is deprecated"):
    module = FORMS[form](package, old)
  assert module is importlib.import_module(new)
  _forget(package, old)


def test_a_name_that_was_never_a_module_is_still_not_importable():
  with pytest.raises(ModuleNotFoundError):
    importlib.import_module("lvf_jax.train.no_such_module")


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
