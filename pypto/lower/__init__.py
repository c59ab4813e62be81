"""Lowering: what a Plan kernel reads, target-neutral (index maps; see index_map.py)."""
