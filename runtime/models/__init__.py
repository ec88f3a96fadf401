"""Model calls: the request and reply types, litellm, the scripted model and the broker.

- ``types``: ``ModelRequest``, ``ModelReply``, ``ToolCall``, ``ModelError`` and their JSON
  forms, and ``ModelReach`` (which model and how to reach it: the broker's, the planner's, the
  reviewer's) (standard library only: the agent process imports it).
- ``llm``: ``complete(request)``, the only module of the project that imports litellm, and only
  lazily, inside functions (importing litellm costs seconds).
- ``scripted``: the deterministic scripted model's file format and playback (no litellm).
- ``broker``: ``Broker`` (orchestrator side, holds the model's reach and the keys) and
  ``BrokerClient`` (agent side, standard library only) over a Unix socket; ``Usage``, the
  totals of model calls (an agent's, a planner's, a reviewer's).

Kept empty on purpose, like ``runtime/__init__.py``: importing this package costs nothing.
"""
