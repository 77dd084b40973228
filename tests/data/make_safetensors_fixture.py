"""Writes python_written.safetensors with Python's safetensors, for tests/safetensors_test.cc.

    pip install safetensors numpy && python3 tests/data/make_safetensors_fixture.py
"""
import os

import numpy as np
from safetensors.numpy import save_file

here = os.path.dirname(os.path.abspath(__file__))
save_file(
    {
        "weight": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "bias": np.array([-1.5, 2.25], dtype=np.float64),
        "ids": np.array([[1, -2], [3, 4]], dtype=np.int64),
        "empty": np.zeros((0, 3), dtype=np.float32),
    },
    os.path.join(here, "python_written.safetensors"),
    metadata={"written_by": "python safetensors"},
)
