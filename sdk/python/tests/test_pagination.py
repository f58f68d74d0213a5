"""Pagination over more than 1,000 objects of a real `gpurent dev`: audit log entries, the
cheapest objects there are (each change a key makes is one, and so is each attempt the rate limit
refuses). Their key is made for this test, so `?key=` selects exactly what the test made,
whatever else the session did."""
import asyncio

import pytest

N = 1001


@pytest.fixture(scope="module")
def audited(dev):
    """N changes by a key of their own: (its id, how many entries the log has of it, the
    operator client that reads them)."""
    admin = dev.client()
    key = admin.keys.create(role="operator", name="sdk-pager")
    answers = []
    pager = dev.client(key.key, on_request=lambda info: answers.append(info.status))
    for i in range(N):
        # Each key may send 400 requests at once, then 200/s: the client waits out the 429s.
        pager.billing.set_settings("admin", warning_threshold_micros=i)
    pager.close()
    assert answers.count(200) == N
    yield key.id, N + answers.count(429), admin
    admin.close()


def pages_requested(infos):
    return [i for i in infos if i.route == "/v1/audit" and i.status == 200]


def test_client_iterates_every_page_lazily(dev, audited):
    key_id, total, _ = audited
    infos = []
    reader = dev.client(on_request=infos.append)
    entries = reader.audit.list(key=key_id, limit=100)
    first = next(entries)
    assert len(pages_requested(infos)) == 1  # lazy: one page so far
    rest = list(entries)
    assert len(pages_requested(infos)) == (total + 99) // 100
    seqs = [first.seq] + [e.seq for e in rest]
    assert len(seqs) == total and len(set(seqs)) == total and seqs == sorted(seqs)
    entries = [first, *rest]
    assert {(e.action, e.key_id) for e in entries} == {("PUT /v1/billing/settings", key_id)}
    assert [e.status for e in entries].count(200) == N
    reader.close()


def test_async_client_iterates_every_page(dev, audited):
    key_id, total, admin = audited
    infos = []

    async def main():
        async with dev.async_client(on_request=infos.append) as c:
            return [e.seq async for e in c.audit.list(key=key_id, limit=400)]
    seqs = asyncio.run(main())
    assert len(pages_requested(infos)) == (total + 399) // 400
    assert len(seqs) == len(set(seqs)) == total
    assert seqs == [e.seq for e in admin.audit.list(key=key_id, limit=500)]
