"""TIMIT next-frame prediction (Garofolo et al. 1993; the pipeline of Wisdom et al. 2016,
arXiv:1611.00035): ``--config=configs/timit.py:<model>``.

Wisdom et al. (2016) pipeline: 8 kHz, STFT 256 / hop 128 Hann, 129 log-magnitude bins
``10 log10(1e-5 + |X|^2)``; predict frame t+1 from frames <= t; masked MSE (mean over valid
frames and bins); 3640 / 192 / 400 utterances. TIMIT is licensed by the LDC: point
``--config.task.options.data_dir`` (or ``$LVF_JAX_DATA_DIR``) at a folder holding ``timit/``.
Batch 128, 1200 epochs (the expRNN reference's TIMIT budget), evaluation every epoch.
The inputs are standardised with the per-bin statistics of the training frames and the model
predicts the deviation from the per-bin training mean (options ``standardize_inputs`` and
``center_targets``: the targets and the MSE keep their units; without them the head's bias
needs thousands of steps to reach the log-magnitude level). Set both False for the raw
pipeline.

Hyperparameters:
* lvf: lvfRNN Table 5, TIMIT: kappa 255, 2 layers, tanh, RMSprop 3e-4, clip 15, tau 2,
  lambda 0.2 (divergence penalty).
* exprnn: expRNN TIMIT n 224, Henaff init, Adam 1e-3 for the non-orthogonal parameters,
  RMSprop at lr / 10 for the skew generator (n 322 / 425: lr 7e-4).
* lstm: 84 units (expRNN's table, the same budget), RMSprop 1e-3 (expRNN reference code).
* every other model: one layer at the budget of expRNN n 224 (83,121 effective parameters,
  ``hidden_for_budget``), Adam 1e-3, clip 15.
"""

from lvf_jax.train.presets import dataset_config, default_preset

DATASET = "timit"
EPOCHS, BATCH = 1200, 128

MATCHED = dict(scornn=224, ncgru=105, antisymmetric=224, gated_antisymmetric=174, nnrnn=186,
               rnn=186, rnn_orth=186, lstm=84, gru=100, urnn=158, eurnn=159, fcurnn=128)

OPTIONS = dict(pad_multiple=32, max_len=None, mse_per="element", standardize_inputs=True,
               center_targets=True, in_memory=True,
               data_dir=None, tfds_dir=None, max_train_examples=None, max_eval_examples=None)


def train_budget(num_train, epochs=EPOCHS, batch=BATCH):
  per_epoch = num_train // batch
  return dict(steps=epochs * per_epoch, batch_size=batch, eval_batch_size=100,
              eval_every=per_epoch, checkpoint_every=per_epoch, log_every=per_epoch)


def presets():
  p = {name: default_preset(name, n, learning_rate=1e-3, clip_norm=15.0)
       for name, n in MATCHED.items()}
  p["lvf"] = dict(hidden=255, num_layers=2,
                  cell=dict(integrator="euler", tau=2.0, activation="tanh", div_penalty=0.2),
                  optim=dict(optimizer="rmsprop", learning_rate=3e-4, clip_norm=15.0))
  p["lstm"] = default_preset("lstm", 84, optimizer="rmsprop", learning_rate=1e-3)
  p["exprnn"] = dict(hidden=224, cell=dict(orthogonal_init="henaff"),
                     optim=dict(optimizer="adam", learning_rate=1e-3, orth_optimizer="rmsprop",
                                lr_orth=1e-4))
  return p


PRESETS = presets()
TRAIN = train_budget(3640)


def get_config(model: str = "lvf"):
  return dataset_config(DATASET, model, PRESETS, options=OPTIONS, train=TRAIN)
