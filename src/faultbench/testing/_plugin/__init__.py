"""The pytest plugin's parts: fixture handles, run outputs (report, session file, shrinking),
async tests run on asyncio (`_async`), the stdio command of a run (`_command`) and which
failing runs are set-up problems rather than agent failures (`_harness`)."""
