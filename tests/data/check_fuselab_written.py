"""Reads a file FuseLab wrote (argv[1]) with Python's safetensors and checks its contents
against what tests/safetensors_test.cc wrote. Exits 0 when they match."""
import sys

import numpy as np
from safetensors import safe_open

with safe_open(sys.argv[1], framework="numpy") as f:
    assert f.metadata() == {"step": "7"}, f.metadata()
    weight, ids = f.get_tensor("weight"), f.get_tensor("ids")
    assert weight.dtype == np.float32 and weight.shape == (2, 3), weight
    assert np.array_equal(weight, np.arange(6, dtype=np.float32).reshape(2, 3) / 4), weight
    assert ids.dtype == np.int64 and ids.tolist() == [5, -6], ids
    assert f.get_tensor("scalar").dtype == np.float64 and f.get_tensor("scalar").tolist() == 3.5
print("python safetensors read FuseLab's file")
