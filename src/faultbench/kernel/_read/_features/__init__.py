"""The reader's passes for the keys that give a world the shape of a real API: `auth:` and
`scopes:`, idempotency keys and versions, effects that happen later and the event feed,
list filters with operators, `sort:` and `page:`. Each is a mixin of the operations loader."""
