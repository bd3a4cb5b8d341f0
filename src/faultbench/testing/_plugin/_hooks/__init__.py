"""The pytest plugin's hooks and fixtures by family, which `faultbench.testing.plugin` (the
`pytest11` entry point) gathers: the state a run's item keeps (`_stash`), options, markers and
run items (`_collection`), the fixtures (`_fixtures`), and the session's reports, gates and
summary (`_session`)."""
