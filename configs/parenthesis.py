"""Parenthesis task (Jing et al. 2019, arXiv:1706.02761):
``--config=configs/parenthesis.py:<model>``.

NC-GRU Sec. 4.1: one layer, Adam 1e-3 for everything (incl. A), batch 16; LSTM 42, GRU 50,
scoRNN 110 (rho 20), GORU 64, NC-GRU 56 (rho 40, U_r and U_c orthogonal, Neumann resets every 50).
Other models use hidden sizes of a similar budget. T in {100, 200}.
"""

from lvf_jax.train.config import make_config, select

ADAM = dict(optimizer="adam", learning_rate=1e-3, lr_orth=1e-3)

PRESETS = {
    "ncgru": dict(hidden=56, cell=dict(rho=40, orthogonal_param="matrix",
                                       orthogonal_reset=True),
                  optim=dict(ADAM, orthogonal_method="neumann_cayley", rho=40, reset_every=50)),
    "lstm": dict(hidden=42, optim=ADAM),
    "gru": dict(hidden=50, optim=ADAM),
    "scornn": dict(hidden=110, cell=dict(rho=20), optim=ADAM),
    "lvf": dict(hidden=64, cell=dict(integrator="euler", tau=1.0, activation="tanh"),
                optim=ADAM),
    "exprnn": dict(hidden=110, optim=ADAM),
    "nnrnn": dict(hidden=64, cell=dict(delta=1e-4, t_decay=1e-6), optim=ADAM),
    "antisymmetric": dict(hidden=64, optim=ADAM),
    "rnn": dict(hidden=64, optim=ADAM),
    "rnn_orth": dict(hidden=64, optim=ADAM),
    "gated_antisymmetric": dict(hidden=64, optim=ADAM),
    "goru": dict(hidden=64, optim=ADAM),
}


def get_config(model: str = "ncgru"):
  p = select(PRESETS, model, "configs/parenthesis.py")
  return make_config("parenthesis", {"T": 100}, model, p["hidden"], cell=p.get("cell"),
                     optim=p["optim"], train=dict(steps=10000, batch_size=16))
