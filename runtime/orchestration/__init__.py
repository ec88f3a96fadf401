"""Orchestration of many agents: plans (``plan.toml``), and running them under one orchestrator."""
