"""Models: what answers a conversation, in the shape every chat API shares, knowing nothing of MCP.

A model is any function `(messages, tools) -> reply`, sync or async, in the OpenAI chat-completions
shape, the de-facto standard that OpenAI, Ollama, llama.cpp's server, vLLM and LM Studio all speak:
`messages` a list of `{"role": ..., "content": ...}`, `tools` a list of
`{"type": "function", "function": {"name", "description", "parameters"}}`, and the reply an
assistant message, `{"role": "assistant", "content": ..., "tool_calls": [...]}` (`shape.py` reads
it, or a whole completion with its `usage`).

- `shape.py`: the reply read into a `Reply` (the model's words, the tools it asks for, tokens);
- `errors.py`: why a model gave no reply, one line each (`ModelError`);
- `keys.py`: an API key, from an environment variable or a prompt, never shown nor written;
- `endpoint.py`: one JSON POST with bounded retries, shared by the adapters (raw HTTP, httpx2);
- `chat_completions.py`: the adapter for OpenAI-compatible endpoints;
- `anthropic.py`: the adapter for Anthropic's Messages API;
- `standin.py`: the scripted stand-in, deterministic rules that are not a language model;
- `function.py`: any of these, or a plain function, as a `Model` the episode loop awaits;
- `budget.py`: how much an episode or an evaluation may spend (turns, tokens, seconds).

Nothing here imports the SDK or knows what a tool call does: the episode loop (`mcp_nb/episodes/`)
turns a tool the model asks for into an MCP call, and what came back into what the model is told.
"""
