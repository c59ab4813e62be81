"""Every example of the design document runs as written through the lazy API and matches NumPy."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import SEED_EXAMPLES, assert_same, load_seed

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = SEED_EXAMPLES
SEED_SECTIONS = ["3_1", "3_2", "4_1", "5_1", "5_2", "7_1"]
load = load_seed


def test_every_seed_section_has_an_example():
    found = sorted(p.name for p in EXAMPLES.glob("seed_*.py"))
    assert [s for s in SEED_SECTIONS if not any(n.startswith(f"seed_{s}_") for n in found)] == []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("section", SEED_SECTIONS)
def test_seed_example_matches_numpy(section, dtype):
    module = load(section)
    for seed in (1, 2):
        results = module.results(seed=seed, dtype=dtype)
        assert results
        for _name, got, want, rtol in results:
            assert_same(got, want, rtol=rtol)
            assert np.asarray(got).dtype == dtype


def test_the_seed_chains_are_written_as_in_the_design_document():
    text = (EXAMPLES / "seed_3_2_composition.py").read_text()
    assert "ppto.sin(ppto.reduce_sum(x, axis=1))\n    * ppto.exp(ppto.transpose(y, (1, 0)))" in text
    text = (EXAMPLES / "seed_5_2_attention.py").read_text()
    assert "weights = ppto.softmax(scores / ppto.sqrt(head_dim))" in text
    text = (EXAMPLES / "seed_7_1_custom_operator.py").read_text()
    assert "@ppto.register_operator\ndef custom_conv2d(input, kernel):" in text


def test_the_demo_prints_what_it_built_and_its_result():
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "seed_3_2_composition.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "{ lambda x:f32[x.0,x.1] y:f32[y.0,y.1] ." in out
    assert "op_chain: float32[128, 256]" in out and "matches NumPy" in out
    assert "DIFFERS" not in out
