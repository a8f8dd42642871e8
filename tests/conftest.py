"""Test configuration: strict dtype and rank promotion, deterministic hypothesis profile.

These settings apply to the test process only; importing lvf_jax never changes them. The tests
compile many small programs, so compilation dominates their time: unless the environment says
otherwise, compiled programs are kept in a persistent cache shared by the pytest-xdist workers
and the command-line runs the tests start (``JAX_COMPILATION_CACHE_DIR``, a per-user folder in
the temporary directory). The raw
data directory is ``$LVF_JAX_DATA_DIR`` when set, else a ``shared/data`` folder beside the
repository when there is one (the data tests skip, saying why, where neither exists).
"""

import contextlib
import getpass
import os
import pathlib
import tempfile

# Four host devices for the multi-device tests, added to any XLA flags the caller set.
_FLAGS = os.environ.get("XLA_FLAGS", "")
if "--xla_force_host_platform_device_count" not in _FLAGS:
  os.environ["XLA_FLAGS"] = f"{_FLAGS} --xla_force_host_platform_device_count=4".strip()
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(
    pathlib.Path(tempfile.gettempdir()) / f"lvf_jax-tests-xla-cache-{getpass.getuser()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
_SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
if not os.environ.get("LVF_JAX_DATA_DIR") and _SHARED.is_dir():
  os.environ["LVF_JAX_DATA_DIR"] = str(_SHARED)

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

settings.register_profile(
    "lvf", max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "lvf"))


@pytest.fixture
def x64():
  """Runs the test body with 64-bit types enabled (for gradient checks and tight tolerances)."""
  with jax.enable_x64(True):
    yield


@pytest.fixture
def unstored_cotangent():
  """A context manager under which ``expm_taylor``'s backward pass hands on its input's
  cotangent unstored (``maps._cotangent_stored`` replaced by the identity): the plain chain,
  for the tests that show what storing it changes. ``expm_taylor`` is jitted, so its traces
  are dropped on entry and on exit."""
  from lvf_jax.geometry import maps

  @contextlib.contextmanager
  def unstored():
    with pytest.MonkeyPatch.context() as patch:
      patch.setattr(maps, "_cotangent_stored", lambda a: a)
      jax.clear_caches()
      try:
        yield
      finally:
        patch.undo()
        jax.clear_caches()

  return unstored
