"""The persistent Pallas kernel of ``h_t = tanh(h_{t-1} K + u_t)`` in Pallas's interpret mode
on the CPU: against a NumPy float64 loop of the recurrence and against the XLA scan
(outputs and gradients), padded and in several batch blocks; and its lowering for a CUDA
GPU through Triton, which the CPU can do without a GPU."""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import recurrences
import tolerances as tol

T, B, N = 7, 3, 8


def _inputs(seed=0):
  rng = np.random.default_rng(seed)
  return (0.4 * rng.normal(size=(N, N)), rng.normal(size=(T, B, N)),
          0.3 * rng.normal(size=(B, N)))


def _tol(scale: float, width: int = N) -> float:
  """Float32 rounding of ``T`` steps of ``width``-term products (each step's error
  propagates through at most ``T`` further products of norm about one here)."""
  return tol.recurrence(T, width, scale)


def _numpy_loop(k, u, h0):
  h, hs = h0, []
  for t in range(u.shape[0]):
    h = np.tanh(h @ k + u[t])
    hs.append(h)
  return h, np.stack(hs)


@pytest.mark.parametrize("batch,width", [
    (B, N),  # padded to 16 x 16, one program
    (18, 20),  # padded to 32 x 32, two programs of 16 rows
    (16, 16),  # no padding
])
def test_forward_matches_numpy_loop(batch, width):
  rng = np.random.default_rng(batch + width)
  k = rng.normal(size=(width, width)) / np.sqrt(width)
  u, h0 = rng.normal(size=(T, batch, width)), 0.3 * rng.normal(size=(batch, width))
  h_last, hs = recurrences.persistent_rnn_scan(
      *(jnp.asarray(a, jnp.float32) for a in (k, u, h0)), interpret=True)
  want_last, want = _numpy_loop(k, u, h0)
  assert hs.shape == want.shape and h_last.shape == want_last.shape
  # rtol=0: the recurrence bound is absolute, at the scale of tanh's outputs (1)
  np.testing.assert_allclose(np.asarray(hs), want, rtol=0, atol=_tol(1.0, width))
  np.testing.assert_allclose(np.asarray(h_last), want_last, rtol=0,  # absolute, as above
                             atol=_tol(1.0, width))


def _loss(scan):
  def loss(k, u, h0):
    h_last, hs = scan(k, u, h0)
    return jnp.sum(jnp.sin(3.0 * hs)) + jnp.sum(h_last ** 2)
  return loss


@pytest.mark.parametrize("block_batch", [16, 32])
def test_gradients_match_the_xla_scan(block_batch):
  k, u, h0 = _inputs(1)
  u, h0 = np.concatenate([u] * 7, axis=1), np.concatenate([h0] * 7)  # 21 rows: 2 blocks
  args = tuple(jnp.asarray(a, jnp.float32) for a in (k, u, h0))
  persistent = _loss(lambda k, u, h0: recurrences.persistent_rnn_scan(
      k, u, h0, block_batch=block_batch, interpret=True))
  xla = _loss(lambda k, u, h0: recurrences.rnn_scan(k, u, h0, activation="tanh"))
  got = jax.jit(jax.grad(persistent, argnums=(0, 1, 2)))(*args)
  want = jax.grad(xla, argnums=(0, 1, 2))(*args)
  for g, w in zip(got, want, strict=True):
    scale = float(jnp.max(jnp.abs(w)))
    # rtol=0: the recurrence bound is absolute, at the gradient's largest entry
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=_tol(scale))
    assert scale > 0.1  # every argument receives a gradient


def test_gradient_matches_finite_differences_in_float64():
  """In float64 (interpret mode), a central difference of the loss along a random direction
  agrees with the kernel's gradient to the difference's truncation error."""
  k, u, h0 = _inputs(2)
  with jax.enable_x64(True):
    args = tuple(jnp.asarray(a, jnp.float64) for a in (k, u, h0))
    loss = _loss(lambda k, u, h0: recurrences.persistent_rnn_scan(k, u, h0, interpret=True))
    grads = jax.grad(loss, argnums=(0, 1, 2))(*args)
    rng = np.random.default_rng(3)
    dirs = tuple(jnp.asarray(rng.normal(size=a.shape)) for a in args)
    step = 1e-5
    plus = loss(*(a + step * d for a, d in zip(args, dirs)))
    minus = loss(*(a - step * d for a, d in zip(args, dirs)))
    numeric = float((plus - minus) / (2 * step))
    analytic = float(sum(jnp.sum(g * d) for g, d in zip(grads, dirs)))
  # step 1e-5: truncation step^2 |f'''| / 6 = 2.4e-7 (this loss's third directional
  # derivative is 1.4e4), rounding u |f| / step ~ 1e-10; 1e-6 |f'| (f' = -85) holds both
  assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic))


@pytest.mark.parametrize("shapes,match", [
    (((N, N + 1), (T, B, N), (B, N)), "'kernel' must be"),
    (((N, N), (T, N), (B, N)), "'u' must be"),
    (((N, N), (T, B, N), (B + 1, N)), "'h0' must be"),
    (((129, 129), (T, B, 129), (B, 129)), "width 129 pads to 256, above MAX_WIDTH = 128"),
])
def test_bad_shapes_raise(shapes, match):
  arrays = [jnp.zeros(s, jnp.float32) for s in shapes]
  with pytest.raises(ValueError, match=match):
    recurrences.persistent_rnn_scan(*arrays, interpret=True)


@pytest.mark.parametrize("block_batch", [8, 24, 16.0, True])
def test_bad_block_batch_raises(block_batch):
  arrays = [jnp.zeros(s, jnp.float32) for s in ((N, N), (T, B, N), (B, N))]
  with pytest.raises(ValueError, match="'block_batch' must be a power of two >= 16"):
    recurrences.persistent_rnn_scan(*arrays, block_batch=block_batch, interpret=True)


def _dot_precisions(jaxpr, found):
  """Every ``dot_general``'s precision in ``jaxpr`` and the jaxprs its equations hold (the
  kernels' bodies among them)."""
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "dot_general":
      found.append(eqn.params["precision"])
    for value in eqn.params.values():
      for sub in value if isinstance(value, (tuple, list)) else (value,):
        sub = getattr(sub, "jaxpr", sub)
        if hasattr(sub, "eqns"):
          _dot_precisions(sub, found)
  return found


def test_precision_reaches_both_kernels_products():
  """``precision`` is the products' inside the forward and backward kernels (on a GPU it
  decides between IEEE float32 and TF32); the third product is ``dK``'s, outside them."""
  k, u, h0 = (jnp.zeros(s, jnp.float32) for s in ((N, N), (T, B, N), (B, N)))
  highest = jax.lax.Precision.HIGHEST
  grad = jax.grad(lambda k: jnp.sum(recurrences.persistent_rnn_scan(
      k, u, h0, precision=highest)[1]))
  found = _dot_precisions(jax.make_jaxpr(grad)(k).jaxpr, [])
  assert found[:2] == [(highest, highest)] * 2 and len(found) == 3


@pytest.mark.parametrize("steps,batch,width", [
    (220, 128, 128),  # copy, batch 128
    (220, 10, 128),  # copy, batch 10: one program of 16 rows
    (784, 128, 100),  # a pixel-MNIST length at a width padded to 128
])
def test_lowers_for_a_cuda_gpu_through_triton(steps, batch, width):
  """The benchmark's settings that fit lower for a CUDA GPU on this CPU (``jax.export``):
  one Triton call forward, one more backward. Pallas's default GPU backend (Mosaic GPU)
  would put the whole sequence in shared memory and refuse; Triton refuses sides that are
  not powers of two; both are caught here, before a GPU's scarce minutes."""
  from jax import export  # pylint: disable=g-import-not-at-top

  def loss(k, u, h0):
    h_last, hs = recurrences.persistent_rnn_scan(k, u, h0)
    return jnp.sum(hs ** 2) + jnp.sum(h_last)

  shapes = [jax.ShapeDtypeStruct(s, jnp.float32)
            for s in ((width, width), (steps, batch, width), (batch, width))]
  triton_call = export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")
  for fn, calls in ((loss, 1), (jax.grad(loss, argnums=(0, 1, 2)), 2)):
    with _target_gpu():
      exported = export.export(jax.jit(fn), platforms=["cuda"],
                               disabled_checks=[triton_call])(*shapes)
    assert exported.mlir_module().count("@__gpu$xla.gpu.triton(") == calls


def _target_gpu():
  """The GPU a lowering targets where JAX asks for one (its Triton lowering reads the
  compute capability from an abstract device since 0.11): an H200; older JAX needs none."""
  sharding = jax.sharding
  if not hasattr(sharding, "AbstractDevice"):
    return contextlib.nullcontext()
  device = sharding.AbstractDevice(device_kind="NVIDIA H200", num_cores=132, platform="gpu")
  mesh = sharding.AbstractMesh((1,), ("x",), (sharding.AxisType.Explicit,),
                               abstract_device=device)
  return sharding.use_abstract_mesh(mesh)


def _contains_pallas_call(fn, *args) -> bool:
  return "pallas_call" in str(jax.make_jaxpr(fn)(*args))


def test_rnn_scan_persistent_true_is_its_xla_loop_with_bias():
  """``rnn_scan(persistent=True)`` (the kernel, interpreted off a GPU) computes the XLA
  loop's states and gradients, the bias inside the tanh included."""
  k, u, h0 = (jnp.asarray(a, jnp.float32) for a in _inputs(4))
  bias = jnp.linspace(-0.5, 0.5, N, dtype=jnp.float32)

  def loss(persistent):
    return _loss(lambda k, u, h0: recurrences.rnn_scan(k, u, h0, bias, activation="tanh",
                                                       persistent=persistent))

  assert _contains_pallas_call(loss(True), k, u, h0)
  assert not _contains_pallas_call(loss(False), k, u, h0)
  got = jax.grad(loss(True), argnums=(0, 1, 2))(k, u, h0)
  want = jax.grad(loss(False), argnums=(0, 1, 2))(k, u, h0)
  for g, w in zip(got, want, strict=True):
    scale = float(jnp.max(jnp.abs(w)))
    # rtol=0: the recurrence bound is absolute, at the gradient's largest entry
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=_tol(scale))


@pytest.mark.parametrize("options,match", [
    (dict(activation="modrelu"), "activation='tanh'; got 'modrelu'"),
    (dict(mask=jnp.ones((T, B), bool)), "no 'mask'"),
    (dict(reverse=True), "reverse=False"),
])
def test_rnn_scan_persistent_true_refuses_what_the_kernel_lacks(options, match):
  k, u, h0 = (jnp.zeros(s, jnp.float32) for s in ((N, N), (T, B, N), (B, N)))
  with pytest.raises(ValueError, match=f"persistent=True needs {match}"):
    recurrences.rnn_scan(k, u, h0, persistent=True, **dict(dict(activation="tanh"), **options))
  with pytest.raises(ValueError, match="'persistent' must be None, True or False; got 1"):
    recurrences.rnn_scan(k, u, h0, persistent=1)


class _FakeGpu:
  platform, device_kind = "gpu", "NVIDIA H200"


@pytest.mark.parametrize("listed,activation,dtype,precision,chosen", [
    ({"NVIDIA H200": {"tf32": {16}}}, "tanh", jnp.float32, None, True),  # N = 8 pads to 16
    ({"NVIDIA H200": {"fp32": {16}}}, "tanh", jnp.float32, "highest", True),
    ({"NVIDIA H200": {"tf32": {16}}}, "tanh", jnp.float32, "highest", False),  # other precision
    ({"NVIDIA H200": {"tf32": {16}}}, "tanh", jnp.float32, "bfloat16", False),  # not measured
    ({"NVIDIA H200": {"tf32": {32}}}, "tanh", jnp.float32, None, False),  # another width
    ({"NVIDIA H100": {"tf32": {16}}}, "tanh", jnp.float32, None, False),  # another GPU
    ({"NVIDIA H200": {"tf32": {16}}}, "modrelu", jnp.float32, None, False),  # another recurrence
    ({"NVIDIA H200": {"tf32": {16}}}, "tanh", jnp.bfloat16, None, False),  # another dtype
])
def test_rnn_scan_selects_the_kernel_only_where_measured_faster(monkeypatch, listed,
                                                                 activation, dtype, precision,
                                                                 chosen):
  """``persistent=None`` takes the kernel on a GPU whose kind the package's record lists at
  the padded width and the matmul precision in effect, for a float32 tanh recurrence;
  nowhere else. (The device is faked; the trace is only inspected, so nothing runs on it.)"""
  from lvf_jax.recurrences import persistent as persistent_lib  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(persistent_lib, "measured_faster", lambda: listed)
  monkeypatch.setattr(persistent_lib.jax, "devices", lambda *a: [_FakeGpu()])
  k, u, h0 = (jnp.zeros(s, dtype) for s in ((N, N), (T, B, N), (B, N)))
  scan = lambda k, u, h0: recurrences.rnn_scan(k, u, h0, activation=activation)[1]
  with jax.default_matmul_precision(precision):
    assert _contains_pallas_call(scan, k, u, h0) == chosen


def test_the_package_selects_the_kernel_nowhere_without_a_gpu_record():
  """The shipped record lists no GPU until ``gpu_kit collect`` has written one from a GPU's
  benchmark record, and on this CPU nothing is selected whatever it lists."""
  from lvf_jax.recurrences import persistent as persistent_lib  # pylint: disable=g-import-not-at-top
  shipped = persistent_lib.measured_faster()
  assert all(kind and all(widths for widths in by_precision.values()) and
             set(by_precision) <= {"fp32", "tf32"} for kind, by_precision in shipped.items())
  assert all(w <= persistent_lib.MAX_WIDTH for by_precision in shipped.values()
             for widths in by_precision.values() for w in widths)
  assert not persistent_lib.selected(N, jnp.float32)
