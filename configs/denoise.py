"""Denoise task (Jing et al. 2019, arXiv:1706.02761): ``--config=configs/denoise.py:<model>``.

NC-GRU Sec. 4.2: one layer, Adam 1e-3 for everything, batch 128, 10,000 iterations,
Neumann resets every 50 steps; NC-GRU 118 (rho 50), LSTM 90, GRU 100, scoRNN 200, GORU 128. Other
models use hidden sizes of a similar budget. T in {200, 400}.
"""

from lvf_jax.train.presets import preset_config

TASK = "denoise"
OPTIONS = dict(T=200)  # NC-GRU Sec. 4.2
TRAIN = dict(steps=10000, batch_size=128)  # NC-GRU Sec. 4.2
# NC-GRU Sec. 4.2: Adam 1e-3 for every parameter
ADAM = dict(optimizer="adam", learning_rate=1e-3, lr_orth=1e-3)

# Models not in the table: hidden sizes of a similar budget, the same optimiser.
PRESETS = {
    # NC-GRU Sec. 4.2: n 118, rho 50, exact inverse every 50
    "ncgru": dict(hidden=118,
                  cell=dict(rho=50, orthogonal_param="matrix", orthogonal_reset=False),
                  optim=dict(orthogonal_method="neumann_cayley", reset_every=50, **ADAM)),
    # NC-GRU Sec. 4.2: n 90
    "lstm": dict(hidden=90,
                 optim=ADAM),
    # NC-GRU Sec. 4.2: n 100
    "gru": dict(hidden=100,
                optim=ADAM),
    # NC-GRU Sec. 4.2: n 200, rho 100
    "scornn": dict(hidden=200,
                   cell=dict(rho=100),
                   optim=ADAM),
    "lvf": dict(hidden=128,
                cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                          integrator="midpoint", tau=1.0, activation="modrelu"),
                optim=ADAM),
    "exprnn": dict(hidden=190,
                   optim=ADAM),
    "nnrnn": dict(hidden=128,
                  cell=dict(delta=1e-4, t_decay=1e-6),  # nnRNN copy set-up
                  optim=ADAM),
    "antisymmetric": dict(hidden=128,
                          optim=ADAM),
    "rnn": dict(hidden=128,
                optim=ADAM),
    "rnn_orth": dict(hidden=128,
                     optim=ADAM),
    "gated_antisymmetric": dict(hidden=128,
                                optim=ADAM),
    # NC-GRU Sec. 4.2: n 128
    "goru": dict(hidden=128,
                 optim=ADAM),
}


def get_config(model: str = "ncgru"):
  return preset_config(TASK, model, PRESETS, options=OPTIONS, train=TRAIN)
