"""Empirical privacy audits: lower bounds on ε from canaries (``zoo.auditing.one_run``, ``zoo.auditing.canaries``),
beside the membership attacks on released models (``zoo.metrics.audit``). An audit can refute a guarantee, never
certify one: the stated (ε, δ) is the upper bound."""
