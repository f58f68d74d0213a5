"""Fixtures of the SDK's tests: the session's `gpurent dev` (tests/devserver.py), and the order
that puts the route-coverage check after every test that calls routes."""
import pytest

from devserver import find_binary, shared_dev, stop_shared


def pytest_configure(config):
    config.addinivalue_line("markers", "after_all: runs after every other test of the session")


def pytest_collection_modifyitems(session, config, items):
    last = [item for item in items if item.get_closest_marker("after_all")]
    items[:] = [item for item in items if item not in last] + last


def pytest_sessionfinish(session, exitstatus):
    stop_shared()


@pytest.fixture(scope="session")
def dev():
    """The shared `gpurent dev`; tests that need it are skipped without a binary."""
    if find_binary() is None:
        pytest.skip("no gpurent binary (set GPURENT_BIN)")
    return shared_dev()
