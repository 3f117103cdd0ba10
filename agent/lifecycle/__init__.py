"""NodeClaim lifecycle: launch, registration, initialization and liveness."""
