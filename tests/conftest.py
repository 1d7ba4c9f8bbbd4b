"""Test-wide settings.

Property tests explore new random cases on every developer run; under CI
(``CI`` set) they are derandomized, so a submission's CI result does not depend
on the examples drawn that time.  A failure found locally is pinned with
``@example`` next to its test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
