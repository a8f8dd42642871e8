"""Adding task (Hochreiter and Schmidhuber 1997; Arjovsky et al. 2016):
``--config=configs/adding.py:<model>``.

NC-GRU Sec. 4.3: single layer, Adam 1e-3 for everything including the skew/orthogonal
matrices, batch 50, 10 epochs of 100,000 sequences (20,000 iterations; fresh sequences are
drawn every step here, ``--config.train.train_pool=100000`` trains on a fixed set);
LSTM 68, GRU 70, scoRNN 190 (rho 95), NC-GRU 80 (rho 43), GORU 128. scoRNN's own set-up
(Helfrich et al. 2018, arXiv:1707.09520): n 170, rho 85. Models not in that table use
hidden sizes of a similar parameter budget and the same optimiser.
Override T with ``--config.task.options.T=400`` (papers: 200, 400, 750, 1000, 5000).
"""

from lvf_jax.train.presets import preset_config

TASK = "adding"
OPTIONS = dict(T=200)  # NC-GRU Sec. 4.3
TRAIN = dict(steps=20000, batch_size=50)  # NC-GRU Sec. 4.3
# NC-GRU Sec. 4.3: Adam 1e-3 for every parameter
ADAM = dict(optimizer="adam", learning_rate=1e-3, lr_orth=1e-3)

# Models not in the table: hidden sizes of a similar budget, the same optimiser.
PRESETS = {
    # NC-GRU Sec. 4.3: n 68
    "lstm": dict(hidden=68,
                 optim=ADAM),
    # NC-GRU Sec. 4.3: n 70
    "gru": dict(hidden=70,
                optim=ADAM),
    # NC-GRU Sec. 4.3: n 190, rho 95
    "scornn": dict(hidden=190,
                   cell=dict(rho=95),
                   optim=ADAM),
    # NC-GRU Sec. 4.3: n 80, rho 43, exact inverse every 50
    "ncgru": dict(hidden=80,
                  cell=dict(rho=43, orthogonal_param="matrix", orthogonal_reset=False),
                  optim=dict(orthogonal_method="neumann_cayley", reset_every=50, **ADAM)),
    "lvf": dict(hidden=128,
                cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                          integrator="midpoint", tau=1.0, activation="tanh"),
                optim=ADAM),
    "exprnn": dict(hidden=170,
                   cell=dict(orthogonal_init="cayley"),  # expRNN: Cayley init
                   optim=ADAM),
    "nnrnn": dict(hidden=128,
                  cell=dict(delta=1e-4, t_decay=1e-6),  # nnRNN copy set-up
                  optim=ADAM),
    "antisymmetric": dict(hidden=128,
                          cell=dict(epsilon=0.1, gamma=0.01),  # AntisymmetricRNN Sec. 5
                          optim=ADAM),
    "rnn": dict(hidden=128,
                optim=ADAM),
    "rnn_orth": dict(hidden=128,
                     optim=ADAM),
    "gated_antisymmetric": dict(hidden=128,
                                optim=ADAM),
    # NC-GRU Sec. 4.3: n 128
    "goru": dict(hidden=128,
                 optim=ADAM),
}


def get_config(model: str = "ncgru"):
  return preset_config(TASK, model, PRESETS, options=OPTIONS, train=TRAIN)
