"""sheetcalc's library: domain rules, persistence, adapters and the HTTP app.

The three Lambda functions under ``functions/`` and the ``sheetcalc`` command are thin doors
into this package; nothing outside it owns a rule.
"""

__version__ = "0.1.0"
