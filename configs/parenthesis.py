"""Parenthesis task (Jing et al. 2019, arXiv:1706.02761):
``--config=configs/parenthesis.py:<model>``.

NC-GRU Sec. 4.1: one layer, Adam 1e-3 for everything (incl. A), batch 16; LSTM 42, GRU 50,
scoRNN 110 (rho 20), GORU 64, NC-GRU 56 (rho 40, U_r and U_c orthogonal, Neumann resets every 50).
Other models use hidden sizes of a similar budget. T in {100, 200}. The paper's 200 epochs are
those of the authors' code (github.com/emucllari1/NC-GRU, ``parenthesis_task.py``): 100 fresh
batches each, 20,000 steps, its logged loss the mean over an epoch's batches.
"""

from lvf_jax.train.presets import preset_config

TASK = "parenthesis"
OPTIONS = dict(T=100)  # NC-GRU Sec. 4.1
# NC-GRU Sec. 4.1: 200 epochs at batch 16; its code's epoch is 100 batches, logged as their mean
TRAIN = dict(steps=20000, batch_size=16, log_every=100)
# NC-GRU Sec. 4.1: Adam 1e-3 for every parameter
ADAM = dict(optimizer="adam", learning_rate=1e-3, lr_orth=1e-3)

# Models not in the table: hidden sizes of a similar budget, the same optimiser.
PRESETS = {
    # NC-GRU Sec. 4.1: n 56, rho 40, U_r and U_c orthogonal, exact every 50
    "ncgru": dict(hidden=56,
                  cell=dict(rho=40, orthogonal_param="matrix", orthogonal_reset=True),
                  optim=dict(orthogonal_method="neumann_cayley", reset_every=50, **ADAM)),
    # NC-GRU Sec. 4.1: n 42
    "lstm": dict(hidden=42,
                 optim=ADAM),
    # NC-GRU Sec. 4.1: n 50
    "gru": dict(hidden=50,
                optim=ADAM),
    # NC-GRU Sec. 4.1: n 110, rho 20
    "scornn": dict(hidden=110,
                   cell=dict(rho=20),
                   optim=ADAM),
    "lvf": dict(hidden=64,
                cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                          integrator="euler", tau=1.0, activation="tanh"),
                optim=ADAM),
    "exprnn": dict(hidden=110,
                   optim=ADAM),
    "nnrnn": dict(hidden=64,
                  cell=dict(delta=1e-4, t_decay=1e-6),  # nnRNN copy set-up
                  optim=ADAM),
    "antisymmetric": dict(hidden=64,
                          optim=ADAM),
    "rnn": dict(hidden=64,
                optim=ADAM),
    "rnn_orth": dict(hidden=64,
                     optim=ADAM),
    "gated_antisymmetric": dict(hidden=64,
                                optim=ADAM),
    # NC-GRU Sec. 4.1: n 64
    "goru": dict(hidden=64,
                 optim=ADAM),
}


def get_config(model: str = "ncgru"):
  return preset_config(TASK, model, PRESETS, options=OPTIONS, train=TRAIN)
