"""Adding task (Hochreiter and Schmidhuber 1997; Arjovsky et al. 2016):
``--config=configs/adding.py:<model>``.

NC-GRU Sec. 4.3: single layer, Adam 1e-3 for everything including the skew/orthogonal
matrices, batch 50, 10 epochs of 100,000 sequences (20,000 iterations; fresh sequences are
drawn every step here); LSTM 68, GRU 70, scoRNN 190 (rho 95),
NC-GRU 80 (rho 43), GORU 128. scoRNN's own set-up (Helfrich et al. 2018, arXiv:1707.09520): n 170,
rho 85. Models not in
that table use hidden sizes of a similar parameter budget and the same optimiser.
Override T with ``--config.task.options.T=400`` (papers: 200, 400, 750, 1000, 5000).
"""

from lvf_jax.train.config import make_config, select

ADAM = dict(optimizer="adam", learning_rate=1e-3, lr_orth=1e-3)

PRESETS = {
    "lstm": dict(hidden=68, optim=ADAM),
    "gru": dict(hidden=70, optim=ADAM),
    "scornn": dict(hidden=190, cell=dict(rho=95), optim=ADAM),
    "ncgru": dict(hidden=80, cell=dict(rho=43, orthogonal_param="matrix", orthogonal_reset=False),
                  optim=dict(ADAM, orthogonal_method="neumann_cayley", rho=43, reset_every=50)),
    "lvf": dict(hidden=128, cell=dict(integrator="midpoint", tau=1.0, activation="tanh"),
                optim=ADAM),
    "exprnn": dict(hidden=170, cell=dict(orthogonal_init="cayley"), optim=ADAM),
    "nnrnn": dict(hidden=128, cell=dict(delta=1e-4, t_decay=1e-6), optim=ADAM),
    "antisymmetric": dict(hidden=128, cell=dict(epsilon=0.1, gamma=0.01), optim=ADAM),
    "rnn": dict(hidden=128, optim=ADAM),
    "rnn_orth": dict(hidden=128, optim=ADAM),
    "gated_antisymmetric": dict(hidden=128, optim=ADAM),
    "goru": dict(hidden=128, optim=ADAM),
}


def get_config(model: str = "ncgru"):
  p = select(PRESETS, model, "configs/adding.py")
  return make_config("adding", {"T": 200}, model, p["hidden"], cell=p.get("cell"),
                     optim=p["optim"], train=dict(steps=20000, batch_size=50))
