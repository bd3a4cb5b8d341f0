"""Run Pydantic AI and OpenAI Agents SDK agents against a faultbench world.

`faultbench.integrations.pydantic_ai` and `faultbench.integrations.openai_agents` each offer
`run_agent(model, prompt, *, mcp, ...)`, where `mcp` is a `World` or a `WorldServer`
(in-process, the fast path: no MCP session), a streamable HTTP URL (`faultbench serve WORLD
--http`) or a stdio command (`["faultbench", "serve", "world.yaml"]`); a `ServedUrl` is a URL with the headers to send
(a bearer token for a world with `auth:`). Both return an `AgentRun`: the framework's result,
or the failure that ended the run, together with the world's trace.

`Seen`, `ToolCall` and `Reply` describe a scripted agent (a *policy*: what it has seen so far
-> its next step; what it is handed is a `History`, whose `prompt` is what the user asked) that each framework module turns into its own scripted model
(`scripted_model(policy)`), so one agent is written once and runs under both frameworks.

Importing this package imports neither framework; each module raises `ImportError` naming
the extra to install when its framework is missing.
"""

from faultbench.serve import ServedUrl as ServedUrl  # a URL with headers, for run_agent

from ._run import AgentRun as AgentRun
from ._script import History as History
from ._script import Policy as Policy
from ._script import Reply as Reply
from ._script import Seen as Seen
from ._script import ToolCall as ToolCall

__all__ = ["AgentRun", "History", "Policy", "Reply", "Seen", "ServedUrl", "ToolCall"]
