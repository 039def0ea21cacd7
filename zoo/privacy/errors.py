"""Errors raised by the privacy machinery, each naming the fix."""

from zoo.errors import UserError


class PrivacyConfigError(UserError):
    """A privacy setting or a model declaration that cannot give the promised guarantee."""


class PrivacyBudgetExhausted(RuntimeError):
    """A private step was requested after the target ε had been spent."""
