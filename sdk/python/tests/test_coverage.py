"""Every route of docs/openapi.json was reached by a typed method during this session, except
the routes the SDK leaves out on purpose (gpurent.api.SKIPPED_ROUTES, listed in the README).

The record is the on_request hook of every client the tests make through tests/devserver.py:
what the clients actually sent, matched to the route their method names. It runs last
(conftest.py) and only when the whole suite ran: a selection of tests reaches fewer routes."""
import os

import pytest

from devserver import RECORDER, SDK, spec_routes
from gpurent.api import SKIPPED_ROUTES

# The test modules that call routes; the check needs all of them in the session.
ROUTE_MODULES = {"test_client.py", "test_routes.py", "test_async.py", "test_pagination.py"}


def test_skipped_routes_are_documented_routes_and_listed_in_the_readme():
    assert set(SKIPPED_ROUTES) <= spec_routes()
    with open(os.path.join(SDK, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for _, path in SKIPPED_ROUTES:
        assert f"`{path}`" in readme, f"README.md does not list the skipped route {path}"


@pytest.mark.after_all
def test_every_route_was_called(request, dev):
    ran = {os.path.basename(str(item.fspath)) for item in request.session.items}
    if not ROUTE_MODULES <= ran:
        pytest.skip(f"needs the whole suite ({', '.join(sorted(ROUTE_MODULES - ran))} not run)")
    failed = request.session.testsfailed
    assert RECORDER.mismatches == [], "paths sent that do not fit their method's route"
    expected = spec_routes() - set(SKIPPED_ROUTES)
    unknown = RECORDER.called() - spec_routes()
    assert not unknown, f"methods call routes docs/openapi.json lacks: {sorted(unknown)}"
    missing = expected - RECORDER.succeeded()
    assert not missing, (f"routes no test called successfully ({failed} test(s) failed "
                         f"before this one): " + ", ".join(f"{m} {p}" for m, p in sorted(missing)))
