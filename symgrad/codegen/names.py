"""Names in generated code: the rules live in ``core.names`` (views print code too); this
module re-exports them for the code generators."""
from ..core.names import (BUILTINS, GENERATED, DimPrinter, code_name, dim_code, is_plain,
                          shape_code)

__all__ = ["BUILTINS", "GENERATED", "DimPrinter", "code_name", "dim_code", "is_plain",
           "shape_code"]
