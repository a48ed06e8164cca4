"""``make demo``'s three scripts run from a fresh process and agree with eager PyTorch
(the demo is the project's main job; a change of task kinds once broke its megakernel
excerpt without any other test noticing)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name: str) -> str:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, os.path.join("examples", name)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_seed_mlp_trains_on_the_default_device() -> None:
    out = run_example("mlp_seed.py")
    losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", out)]
    assert len(losses) >= 2 and losses[-1] < losses[0], out[:2000]


def test_mlp_megakernel_matches_eager_in_both_launch_modes() -> None:
    out = run_example("mlp_megakernel.py")
    errors = dict(re.findall(r"(\w+) mode on .*: max \|megakernel - eager\| = (\S+)", out))
    assert set(errors) == {"megakernel", "levels"}, out[-2000:]
    assert all(float(e) < 1e-5 for e in errors.values()), errors
    assert "@triton.jit" in out  # the matmul device function is printed


def test_mncore_training_matches_eager() -> None:
    out = run_example("mlp_mncore.py")
    rows = re.findall(r"^\s*\d+\s+(\S+)\s+(\S+)\s+(\S+)$", out, re.MULTILINE)
    assert len(rows) == 10, out[:2000]
    assert all(float(diff) < 1e-4 for _, _, diff in rows), rows
