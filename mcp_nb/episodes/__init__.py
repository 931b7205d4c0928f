"""Episodes: a model in the loop with the server's tools, each of its tool calls an ordinary call.

- `policy.py`: what the host tells the model of each call (`HostPolicy`), a choice made explicit;
- `episode.py`: what an episode leaves (`Episode`, its turns and steps), as data and as a view;
- `loop.py`: one episode on mcp_nb's loop (`EpisodeRun`), the model asked, its tool calls made
  through the engine (`Engine.prepare`, `Call.run`), so each is recorded like any other call;
- `tasks.py`: an evaluation's tasks and the check that says whether an episode succeeded;
- `evaluate.py`: many episodes on the one batch core (`batch.core`), per task, model and variant,
  with their rates and confidence intervals;
- `faces.py`: `agent()` and `evaluate()` as the API gives them.

What a failed call led to (recovered, repeated, switched, gave up) is read from an episode's
steps by `records/recovery.py`, below, so that the history's own views can read it too.
The models themselves are `mcp_nb/models/`, which knows nothing of MCP.
"""
