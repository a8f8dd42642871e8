"""A model family is registered by one line of ``lvf_jax.cells.CELLS``: what the configs, the
parameter budget and old configs need to know of it, the family's cell declares."""

import jax
import pytest

from lvf_jax import cells, models
from lvf_jax.train import config as config_lib
from lvf_jax.train import presets, train_and_evaluate


class PairedTanhCell(cells.TanhRNNCell):
  """A stand-in new family: the tanh RNN whose hidden sizes come in pairs, offered by the
  tables that name it only, and whose ``activation`` default changed (an old config had
  ``'tanh'`` where a new one would not say)."""

  offered = "own_tables"
  hidden_multiple = 2
  predated_values = {"activation": "tanh"}


@pytest.fixture
def registered(monkeypatch):
  monkeypatch.setitem(cells.CELLS, "paired", PairedTanhCell)  # the one registration line
  return "paired"


def test_the_configs_offer_a_family_as_it_declares(registered):
  assert registered in presets.offered("own_tables")
  assert registered not in presets.offered("every_config")
  assert all(cells.CELLS[m].offered == "every_config" for m in presets.MODELS)
  assert set(presets.UNITARY_MODELS) == {"urnn", "eurnn", "fcurnn"}
  assert set(presets.TABLE_MODELS) == {"softorth", "kru"}
  assert "goru" not in presets.MODELS + presets.UNITARY_MODELS + presets.TABLE_MODELS


def test_the_parameter_budget_keeps_the_declared_multiple(registered):
  hidden = models.hidden_for_budget(registered, 2000, input_size=3, output_size=4)
  assert hidden % 2 == 0 and hidden > 2
  assert models.hidden_for_budget("nnrnn", 2000, input_size=3, output_size=4) % 2 == 0


def test_an_old_config_reads_the_declared_predated_value(registered):
  assert config_lib.predated_values(registered) == {"activation": "tanh"}
  assert config_lib.predated_values("lvf") == {"parametrization": "paper",
                                               "integrator": "euler"}
  assert config_lib.predated_values("no-such-cell") == {}
  c = config_lib.base_config()
  c.model.name = registered
  assert config_lib.with_predated_values(c).model.cell["activation"] == "tanh"


def test_a_registered_family_trains_from_a_config(registered, tmp_path):
  c = config_lib.make_config("copy", {"T": 4}, registered, 6,
                             train=dict(steps=2, batch_size=4, eval_every=2,
                                        checkpoint_every=2, eval_size=8, test_size=8,
                                        progress_bar=False, tensorboard=False, plot=False))
  summary = train_and_evaluate(c, str(tmp_path))
  assert summary["steps"] == 2 and summary["model"] == registered
  assert jax.numpy.isfinite(summary["final_validation"]["loss"])
