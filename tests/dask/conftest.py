"""The cluster the Dask tests run on: ``distributed.LocalCluster`` with 2 worker processes,
started once for the package's tests."""

import pytest


@pytest.fixture(scope="package")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(  # (the scheduler's HTTP server on a free port: a
        n_workers=2,  # second cluster on the machine, another test run, keeps 8787)
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
