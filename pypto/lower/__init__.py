"""Lowering: a Plan kernel as every target reads it, target-neutral.

``index_map.py``: where each element of a view comes from (one rule per view op, in its
registry entry), with its renderings at a point, over an interval, along a chunk axis;
``kernel.py``: a kernel lowered once (views of memory as one read with the composed map, the
computing equations in order, stores with their positions, reductions and scans with NumPy's
combine and identity); ``families.py``: what an equation is to fusion and the emitters.
"""
