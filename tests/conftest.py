"""Test configuration: strict dtype and rank promotion, deterministic hypothesis profile.

These settings apply to the test process only; importing lvf_jax never changes them.
"""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

# Many tests build the same tiny model several times (train, resume, evaluate); each build
# jits fresh closures, so without a cache every one recompiles identical HLO. A compilation
# cache private to this test process (removed at exit) turns the repeats into cache hits.
# Set LVF_TEST_COMPILATION_CACHE=0 to compile everything afresh.
if os.environ.get("LVF_TEST_COMPILATION_CACHE", "1") != "0":
  _cache_dir = tempfile.mkdtemp(prefix="lvf_jax_test_xla_cache_")
  atexit.register(shutil.rmtree, _cache_dir, ignore_errors=True)
  jax.config.update("jax_compilation_cache_dir", _cache_dir)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

settings.register_profile(
    "lvf", max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "lvf"))


@pytest.fixture
def x64():
  """Runs the test body with 64-bit types enabled (for gradient checks and tight tolerances)."""
  with jax.enable_x64(True):
    yield
