"""The handler of tests/env/worlds/buggy.yaml."""


def explode(world, clock) -> dict:
    """A bug: a KeyError is not a refusal, so the call is an internal error."""
    return {}["missing"]
