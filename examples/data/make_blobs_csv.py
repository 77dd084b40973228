"""Writes blobs.csv for //examples:classify: 600 points in 4-D around 3 overlapping centres,
one row per point, the class label (0-2) in the last column. Standard library only, seeded."""
import os
import random

rng = random.Random(7)
centres = [(0.0, 0.0, 1.0, -1.0), (1.5, 1.0, 0.0, 0.0), (0.0, 1.8, -1.0, 1.0)]
rows = ["f0,f1,f2,f3,label"]
for i in range(600):
    label = i % 3
    point = [c + rng.gauss(0, 0.7) for c in centres[label]]
    rows.append(",".join(f"{v:.4f}" for v in point) + f",{label}")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "blobs.csv"), "w") as f:
    f.write("\n".join(rows) + "\n")
