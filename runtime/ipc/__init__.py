"""The orchestrator's Unix-socket services, shared by those that run one: the model broker
(`runtime.models.broker`), the approvals service (`runtime.approvals.service`), the egress proxy
(`runtime.sandbox.egress`) and the claude-code backend's model proxy. Standard library only."""
