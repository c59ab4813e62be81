"""Test configuration: hypothesis profiles and the repository root on sys.path for examples."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

# "ci" (default): reproducible (derandomized) and sized for a 2-core machine; "dev": more and
# random examples: HYPOTHESIS_PROFILE=dev python3 dev.py test
settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Every chain and compiled function in the tests runs the NumPy code generated from its Plan,
# with a small cache budget so that kernels run in many blocks, the last one partial
# (PYPTO_BACKEND=reference runs the plans kernel by kernel instead, their memory checked:
# temporaries live in the memory the plan assigns and freed memory is overwritten).
os.environ.setdefault("PYPTO_CHUNK_BUDGET", "256")
# the generated programs, also where the original would cost less (tests/loops test that choice)
os.environ.setdefault("PYPTO_ORIGINAL", "never")
os.environ.setdefault("PYPTO_STRICT_EMIT", "1")  # a code generator failure fails the test
os.environ.setdefault("PYPTO_CHECK_PLAN", "1")
# The compile cache (pypto/cache.py) is on, in a directory of this run's own: a function that
# several tests compile runs from it after the first (its tests turn it off where they must)
if "PYPTO_CACHE_DIR" not in os.environ:
    os.environ["PYPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-test-cache-")
    atexit.register(shutil.rmtree, os.environ["PYPTO_CACHE_DIR"], True)
