"""The cluster the Dask tests run on: ``distributed.LocalCluster`` with 2 worker processes,
started once for the package's tests."""

import pytest


@pytest.fixture(scope="package")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
