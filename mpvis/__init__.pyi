# Type stub of mpvis/__init__.py: the lazily imported names, typed.
from mpvis.api import Run as Run
from mpvis.api import open as open
from mpvis.errors import MpvisError as MpvisError

__version__: str
__all__ = ["MpvisError", "Run", "__version__", "open"]
