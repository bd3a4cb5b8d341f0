"""`build_server(world, webhook_url=...)` (`faultbench serve --webhook-url`): after each tool
call the deliveries due are POSTed to a real receiver on 127.0.0.1, from a worker thread, and
every attempt is in the world's log."""

from __future__ import annotations

import mcp
import pytest

from faultbench.kernel import WebhookAttempted, World
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import WebhookUrlError, build_server

from ..test_webhooks import WORLD, Receiver, receiver  # noqa: F401 (a fixture)

pytestmark = pytest.mark.anyio


async def test_each_call_delivers_what_it_made_due(receiver: Receiver):  # noqa: F811
    receiver.statuses = [503]
    world = World.from_spec(load_spec("<hooks>", text=WORLD))
    async with mcp.Client(build_server(world, webhook_url=receiver.url)) as client:
        await client.call_tool("issue_refund", {"amount": 5})
        await client.call_tool("issue_refund", {"amount": 6})
    attempts = [e for e in world.events if isinstance(e, WebhookAttempted)]
    # the first call's delivery failed; the second call's pass delivered its own (the retry
    # waits for its backoff, 30 s of virtual time the calls did not reach)
    assert [(a.delivery, a.attempt, a.outcome) for a in attempts] == [
        ("dlv_1", 1, "failed"),
        ("dlv_2", 1, "succeeded"),
    ]
    assert [e["type"] for e in receiver.events()] == ["refund.created", "refund.created"]


def test_a_webhook_url_needs_a_world_with_webhooks_on_loopback():
    world = World.from_spec(load_spec("<hooks>", text=WORLD))
    with pytest.raises(WebhookUrlError, match="is not on loopback"):
        build_server(world, webhook_url="http://10.0.0.1/hooks")
    plain = World.from_spec(load_spec("<plain>", text=WORLD.split("webhooks:")[0]))
    with pytest.raises(WebhookUrlError, match="has no webhooks: block"):
        build_server(plain, webhook_url="http://127.0.0.1:9/hooks")
