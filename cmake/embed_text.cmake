# Writes IN's text into OUT as a C++ raw string constant `kRetcRuntimePy`.
file(READ ${IN} content)
file(WRITE ${OUT} "// Generated from runtime/retc_runtime.py; do not edit.\n#pragma once\nstatic const char kRetcRuntimePy[] = R\"retc_py(${content})retc_py\";\n")
