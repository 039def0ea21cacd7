"""Errors raised by the privacy machinery, each naming the fix."""


class PrivacyConfigError(ValueError):
    """A privacy setting or a model declaration that cannot give the promised guarantee."""


class PrivacyBudgetExhausted(RuntimeError):
    """A private step was requested after the target ε had been spent."""
