"""Permuted sequential MNIST (Le, Jaitly and Hinton 2015, arXiv:1504.00941):
``--config=configs/pmnist.py:<model>``.

As ``configs/mnist.py`` with the fixed pixel permutation ``RandomState(92916).permutation(784)``
(``--config.task.options.permutation_seed``); expRNN's pMNIST learning rate for n 170 is
1e-3 (n 360: 7e-4, n 512: 5e-4). nnRNN's n 512 set-up is its psMNIST one.
"""

from lvf_jax.train.presets import dataset_config

DATASET = "pmnist"
STEPS_PER_EPOCH = 429  # 55,000 training images (5,000 held out) at batch 128
OPTIONS = dict(valid_size=5000, valid_seed=0, permutation_seed=92916, source="lvf",
               data_dir=None, tfds_dir=None, max_train_examples=None, max_eval_examples=None)
TRAIN = dict(steps=70 * STEPS_PER_EPOCH,  # 70 epochs: scoRNN's MNIST budget
             batch_size=128, eval_batch_size=500, eval_every=STEPS_PER_EPOCH,
             checkpoint_every=STEPS_PER_EPOCH, log_every=50)

# Models not in the MNIST tables (lvf, ncgru, gru, rnn, rnn_orth): one layer at the budget of
# expRNN n 170 (16,415 parameters, lvf_jax.models.hidden_for_budget).
PRESETS = {
    # expRNN pMNIST n 170: RMSprop 1e-3, lr_orth lr / 10
    "exprnn": dict(hidden=170,
                   cell=dict(orthogonal_init="cayley"),  # Cayley init
                   optim=dict(optimizer="rmsprop", learning_rate=1e-3)),
    # scoRNN MNIST n 170: rho 17, RMSprop 1e-3, A at 1e-4
    "scornn": dict(hidden=170,
                   cell=dict(rho=17),
                   optim=dict(optimizer="rmsprop", learning_rate=1e-3, lr_orth=1e-4)),
    # nnRNN psMNIST n 512: RMSprop 2e-4, lr_orth 2e-5, delta 0.1, T decay 1e-4
    "nnrnn": dict(hidden=512,
                  cell=dict(orthogonal_init="cayley", delta=0.1, t_decay=1e-4),
                  optim=dict(optimizer="rmsprop", learning_rate=2e-4, lr_orth=2e-5)),
    # AntisymmetricRNN Table 1: 128 units (optimiser not given: Adam 1e-3)
    "antisymmetric": dict(hidden=128,
                          cell=dict(epsilon=0.1, gamma=0.01),  # Sec. 5
                          optim=dict(optimizer="adam", learning_rate=1e-3)),
    # AntisymmetricRNN Table 1: 128 units (Adam 1e-3)
    "gated_antisymmetric": dict(hidden=128,
                                cell=dict(epsilon=0.1, gamma=0.01),  # Sec. 5
                                optim=dict(optimizer="adam", learning_rate=1e-3)),
    # expRNN and AntisymmetricRNN tables: 128 units, RMSprop 1e-3
    "lstm": dict(hidden=128,
                 cell=dict(forget_bias=1.0),  # Arjovsky et al. 2016
                 optim=dict(optimizer="rmsprop", learning_rate=1e-3)),
    # full-capacity uRNN pixel MNIST (Wisdom et al. 2016): n 116, RMSprop 1e-3, W at 1e-6
    "fcurnn": dict(model="fcurnn", hidden=116,
                   optim=dict(optimizer="rmsprop", learning_rate=1e-3, rmsprop_decay=0.9,
                              lr_orth=1e-6, unitary_gradient="rms")),
    # full-capacity uRNN pixel MNIST: n 512, RMSprop 1e-4, W at 1e-6
    "fcurnn_n512": dict(model="fcurnn", hidden=512,
                        optim=dict(optimizer="rmsprop", learning_rate=1e-4, rmsprop_decay=0.9,
                                   lr_orth=1e-6, unitary_gradient="rms")),
    "softorth": dict(
        hidden=128,  # AntisymmetricRNN Table 1: n=128
        cell=dict(margin=1.0,  # Vorontsov et al. 2017 Tables 1-2's m = 1 (quoted row: m = 0.1)
                  orthogonality_penalty=0.0),  # the margin alone bounds the spectrum
        optim=dict(optimizer="rmsprop",  # library choice, as the file's other RNNs
                   learning_rate=1e-3,  # library choice
                   orthogonal_method="multiplicative",  # Vorontsov Sec. 2: Cayley update
                   lr_orth=1e-4)),  # library rule lr / 10 (expRNN's)
    "kru": dict(
        hidden=512,  # AntisymmetricRNN Table 1: n=512
        cell=dict(factor_size=2,  # Jose et al. 2018: 2 x 2 factors, 8 log2(n) parameters
                  complex_valued=True,  # Jose et al. 2018: complex factors and state
                  unitary_penalty=1e-4,  # library choice: strength not in the sources here
                  factored=True,  # Kronecker blocks applied each step, not the dense W
                  block_size=32),  # library choice: merged into blocks of <= 32 (same W)
        optim=dict(optimizer="rmsprop", learning_rate=1e-3)),  # library choice
    # lvfRNN Table 5's most common row
    "lvf": dict(hidden=170,
                cell=dict(parametrization="paper",  # lvfRNN eq. 8's V, as the rates assume
                          integrator="euler", tau=1.0, activation="tanh"),
                optim=dict(optimizer="adam", learning_rate=1e-3)),
    # NC-GRU Alg. 1: rho = n // 10, exact every 50
    "ncgru": dict(hidden=77,
                  cell=dict(rho=7, orthogonal_param="matrix"),
                  optim=dict(optimizer="adam", learning_rate=1e-3,
                             orthogonal_method="neumann_cayley", reset_every=50)),
    "gru": dict(hidden=71,
                optim=dict(optimizer="adam", learning_rate=1e-3)),
    # RMSprop 1e-4
    "rnn": dict(hidden=122,
                optim=dict(optimizer="rmsprop", learning_rate=1e-4)),
    # RMSprop 1e-4
    "rnn_orth": dict(hidden=122,
                     optim=dict(optimizer="rmsprop", learning_rate=1e-4)),
}


def get_config(model: str = "exprnn"):
  return dataset_config(DATASET, model, PRESETS, options=OPTIONS, train=TRAIN)
