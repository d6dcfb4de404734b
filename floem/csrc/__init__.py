"""The C-body front end: Floem forms in element bodies -> plain C, analysed with pycparser.

`analyze` reads every body (and the ``floem.main`` code) of a program in one
pycparser translation unit and returns a `BodyInfo` per element: ports read,
the output form and its calls, per-packet fields used, killed and written,
persistent states named (`analyze_unit`: also what the include text defines that a
program must hold once). `lower` turns one body into the plain C pasted inside
the element's generated function, with ``#line`` directives into the app file.
"""
from floem.csrc.analyze import Analysis, analyze, analyze_unit
from floem.csrc.lower import lower, lower_named
from floem.csrc.model import Body, BodyForm, BodyInfo, FieldUse, Port

__all__ = ["Analysis", "Body", "BodyForm", "BodyInfo", "FieldUse", "Port", "analyze",
           "analyze_unit", "lower", "lower_named"]
