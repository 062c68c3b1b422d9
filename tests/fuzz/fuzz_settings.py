"""Hypothesis settings of the fuzz tests: ``QUICK`` for the versions in the default suite,
``LONG`` for the ``slow`` campaign (``python -m pytest -m slow tests/fuzz``).

Both run without a deadline and with every health check off: an example runs the
interpreter, compiles with LLVM or loads an executable, so its time varies and is large
by design. ``QUICK`` leaves out the shrink phase: shrinking a failure of these tests
reruns such examples for up to five minutes (hypothesis' own limit) per failing test, too
long for CI; the failure is reported as generated, with the ``@reproduce_failure`` blob
that replays it, and the tests' messages say what the example did (the schedule fuzzer
prints the applied primitives). ``LONG`` shrinks.
"""

from hypothesis import HealthCheck, Phase, settings

LONG = settings(deadline=None, suppress_health_check=list(HealthCheck))
QUICK = settings(LONG, print_blob=True,
                 phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target])
