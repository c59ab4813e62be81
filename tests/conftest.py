"""Test configuration: hypothesis profiles and the repository root on sys.path for examples."""

import os
import sys
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

# every chain and compiled function in the tests runs through the Plan with its memory checked:
# temporaries live in the memory the plan assigns, freed memory is overwritten (emit/reference.py)
os.environ.setdefault("PYPTO_CHECK_PLAN", "1")
