"""Pixel-by-pixel CIFAR-10 (Chang et al. 2019, arXiv:1902.09689, Sec. 5):
``--config=configs/cifar10.py:<model>``.

1024 steps of RGB pixels in [0, 1]; last-state classifier; 5,000 training images held out
for validation. Batch 128, 100 epochs, evaluation every epoch.

Hyperparameters from AntisymmetricRNN Table 2: antisymmetric and gated_antisymmetric with
256 units (eps 0.1, gamma 0.01; the paper's optimiser settings are not given: Adam 1e-3),
LSTM with 128 units, and the ablation model of Sec. 5.4 (preset ``ablation``: the gated
AntisymmetricRNN with one unstructured matrix in place of ``W - W^T``, 196 units, the
table's 42k parameters). Every other model gets the hidden size matching the parameter budget of
the 256-unit AntisymmetricRNN (36,234 effective parameters, ``hidden_for_budget``; 60,042
for the noise-padded inputs of ``configs/cifar10_noise.py``).

CIFAR-10 must be prepared in the TFDS directory (``lvf_jax.data.prepare('cifar10')`` with the
``cifar-10-binary.tar.gz`` archive in ``$LVF_JAX_DATA_DIR/cifar10``), or use TFDS's built-in
copy with ``--config.task.options.source=tfds``.
"""

from lvf_jax.train.presets import dataset_config, default_preset

DATASET = "cifar10"
EPOCHS, BATCH = 100, 128
STEPS_PER_EPOCH = 45000 // BATCH  # 351

OPTIONS = dict(valid_size=5000, valid_seed=0, noise_seed=0, source="lvf", data_dir=None,
               tfds_dir=None, max_train_examples=None, max_eval_examples=None)
TRAIN = dict(steps=EPOCHS * STEPS_PER_EPOCH, batch_size=BATCH, eval_batch_size=500,
             eval_every=STEPS_PER_EPOCH, checkpoint_every=STEPS_PER_EPOCH, log_every=50)

# hidden sizes at the budget of AntisymmetricRNN-256 for 3 (pixel) / 96 (noise-padded) inputs
MATCHED = {
    3: dict(lvf=256, exprnn=256, scornn=256, ncgru=116, nnrnn=182, rnn=183, rnn_orth=183,
            gru=106),
    96: dict(lvf=256, exprnn=256, scornn=256, ncgru=106, nnrnn=196, rnn=197, rnn_orth=197,
             gru=99),
}


def presets(input_size):
  m = MATCHED[input_size]
  p = {name: default_preset(name, n, learning_rate=1e-3) for name, n in m.items()}
  for name in ("exprnn", "nnrnn", "rnn", "rnn_orth"):  # RMSprop as in their papers
    p[name] = default_preset(name, m[name], optimizer="rmsprop",
                             learning_rate=1e-4 if name.startswith("rnn") else 1e-3)
  p.update(antisymmetric=default_preset("antisymmetric", 256),
           gated_antisymmetric=default_preset("gated_antisymmetric", 256),
           lstm=default_preset("lstm", 128))
  p["ablation"] = dict(
      model="gated_antisymmetric",  # Sec. 5.4: eq 13 with unstructured matrices
      hidden=196,  # Table 2: ablation model, 196 units
      cell=dict(epsilon=0.1, gamma=0.01,  # as the gated AntisymmetricRNN preset
                unstructured=True),  # Sec. 5.4: no antisymmetric structure
      optim=dict(optimizer="adam", learning_rate=1e-3))  # as the gated preset (not reported)
  return p


PRESETS = presets(3)


def get_config(model: str = "antisymmetric"):
  return dataset_config(DATASET, model, PRESETS, options=OPTIONS, train=TRAIN)
