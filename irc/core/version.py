"""irc's version (also ``irc.__version__``); tuning records carry it."""

__version__ = "0.1.0"
