"""The README's main job: an orthogonal RNN solves the copy task, a tanh RNN cannot.

``python -m experiments.main --config=configs/demo.py --workdir=/tmp/lvf_demo``

Copy task with T=200 (Arjovsky et al. 2016), 128 hidden units, batch 64: expRNN (modReLU,
Henaff init, RMSprop with lr_orth = lr/10) against a vanilla tanh RNN with the same
optimiser. Both runs need no download; the comparison table and plots are written to the
workdir. Measured on 2 CPU cores in docs/RESULTS.md, 'The README main job'.
"""

import ml_collections

from lvf_jax.train.config import make_config


def get_config():
  c = make_config(
      "copy", {"T": 200}, "exprnn", 128, cell=dict(orthogonal_init="henaff"),
      optim=dict(optimizer="rmsprop", learning_rate=1e-3, lr_orth=1e-4),
      train=dict(steps=1200, batch_size=64, eval_every=200, eval_size=512, log_every=20,
                 checkpoint_every=400, tensorboard=False))
  c.runner = "compare"
  c.compare = ml_collections.ConfigDict({
      "exprnn": {"model": {"name": "exprnn"}},
      "tanh_rnn": {"model": {"name": "rnn", "cell": {}}},
  })
  return c
