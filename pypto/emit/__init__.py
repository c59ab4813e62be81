"""Emitters, Plan to Python module source (numpy, cuda, dask targets). Not built yet."""
