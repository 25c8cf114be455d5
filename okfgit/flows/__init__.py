"""flows: the operations several verbs share (capture, projection, exchange, writing concepts, runs, hooks)."""
