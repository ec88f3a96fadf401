"""Model calls: the request and reply types, litellm, the scripted model and the broker.

- ``types``: ``ModelRequest``, ``ModelReply``, ``ToolCall``, ``ModelError`` and their JSON
  forms (standard library only: the agent process imports it).
- ``llm``: ``complete(request)``, the only module of the project that imports litellm, and only
  lazily, inside functions (importing litellm costs seconds).
- ``scripted``: the deterministic scripted model's file format and playback (no litellm).
- ``broker``: ``Broker`` (orchestrator side, holds the model configuration and the keys) and
  ``BrokerClient`` (agent side, standard library only) over a Unix socket.

Kept empty on purpose, like ``runtime/__init__.py``: importing this package costs nothing.
"""
