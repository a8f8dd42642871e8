"""The lvfRNN trained with one plain ``optax.adam`` (no label partition), beside the tanh RNN.

``experiments/lvf_single_optimizer.py`` builds both as a user would (``.prepared()`` cells
under ``nn.RNN``) and trains them on the same batches (the same keys). The lvfRNN with its
defaults (``parametrization='natural'``, ``integrator='exp'``, the rotation field) must learn
as far as the tanh RNN in the same steps on a memory task and a sequence-to-sequence task;
with the paper's parametrisation it does not at n = 512 and Adam 3e-3, so the comparison can
fail.
"""

import importlib
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import lvf_single_optimizer as study
from lvf_jax import geometry
from lvf_jax.train import model_builder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Steps of each task: the copy task's recall is learnt within a few hundred steps, the
#: addition encoder-decoder needs a few thousand for the tanh RNN to pass 0.9 accuracy.
STEPS = {"copy": 300, "addition": 2000}


def _reach(task, n, lr):
  """The tanh RNN's loss after ``STEPS`` plus a tenth of the distance it travelled: "as
  far as the tanh RNN", a tenth of its progress allowed for another model class on the
  same batches (the losses are means over the last tenth of the steps)."""
  tanh = study.train(task, dict(model="tanh", n=n), lr, STEPS[task])
  assert tanh["finite"] and tanh["last_loss"] < tanh["first_loss"]
  return tanh["last_loss"] + 0.1 * (tanh["first_loss"] - tanh["last_loss"])


def _learns(task, n, lr, **cell):
  reach = _reach(task, n, lr)
  got = study.train(task, dict(model="lvf", n=n, **cell), lr, STEPS[task])
  return got["finite"] and got["last_loss"] <= reach, (got, reach)


def _cases(fast):
  return [pytest.param(task, n, lr, marks=() if (task, n, lr) in fast else pytest.mark.slow)
          for task in ("copy", "addition") for n in (64, 512) for lr in (1e-3, 3e-3)]


@pytest.mark.parametrize("task,n,lr", _cases(fast={("copy", 64, 3e-3),
                                                   ("addition", 64, 1e-3)}))
def test_the_default_lvf_learns_as_far_as_the_tanh_rnn_with_one_adam(task, n, lr):
  ok, why = _learns(task, n, lr)
  assert ok, why


#: Measured (docs/geometry.md): on the encoder-decoder the midpoint map of the rotation field
#: (eigen-angles compressed to (-2 atan(pi / 2), 2 atan(pi / 2))) and Euler's map (``I - A``,
#: singular values up to sqrt(1 + pi^2)) lag the tanh RNN; on the memory task they do not.
OTHER_MAPS_ON_SEQ2SEQ = pytest.mark.xfail(
    reason="midpoint and Euler lag the tanh RNN on the encoder-decoder", strict=False)


@pytest.mark.slow
@pytest.mark.parametrize("integrator", ["midpoint", "euler"])
@pytest.mark.parametrize("task", ["copy", pytest.param("addition",
                                                       marks=OTHER_MAPS_ON_SEQ2SEQ)])
def test_the_other_maps_with_one_adam(task, integrator):
  ok, why = _learns(task, 64, 3e-3, integrator=integrator)
  assert ok, why


@pytest.mark.slow
def test_the_paper_parametrization_does_not_at_n_512():
  """The same comparison fails with ``parametrization='paper'`` (``V`` stored as is)."""
  ok, why = _learns("copy", 512, 3e-3, parametrization="paper")
  assert not ok, why


def test_the_pages_tables_are_the_records():
  runs = study.load()
  assert runs and all(r["rows"] for r in runs)
  page = open(os.path.join(ROOT, study.PAGE)).read()
  block = page.split(study.START, 1)[1].split(study.END, 1)[0]
  assert block.strip() == study.report(runs).strip()


@pytest.mark.parametrize("preset", ["copy.lvf_separate", "copy.lvf", "jsb.lvf"])
def test_the_paper_presets_keep_the_papers_field_bit_for_bit(preset):
  """The presets behind the reproduced rows name ``'paper'``: from the same parameters their
  cells give the kernel of eqs. 9-10 and 16 (or 5) of the stored ``V`` (with the divergence
  parameter under ``separate_divergence``) exactly as before the default changed."""
  module, name = preset.split(".")
  config = importlib.import_module(f"configs.{module}").get_config(name)
  config.model.hidden = 8  # the cell, not the size, is under test
  cell = model_builder.build_cells(config)[0]
  assert cell.parametrization == "paper"
  variables = cell.init(jax.random.key(0), jnp.zeros((2, 8)), jnp.zeros((2, 3)))
  p = dict(variables["params"])
  p["vector_field"] = jax.random.uniform(jax.random.key(1), (8, 8))
  v = p["vector_field"]
  if cell.separate_divergence:
    p["vector_field_divergence"] = 0.1 * jax.random.normal(jax.random.key(2), (8,))
    v = geometry.with_divergence(v, p["vector_field_divergence"])
  want = geometry.get_integrator(cell.integrator)(geometry.directional_derivative(v), cell.tau).T
  got = cell.apply({"params": p}, method=lambda c: c.prepare())["kernel"]
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))  # the same operations
