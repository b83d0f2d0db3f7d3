# Writes IN's text into OUT as a C++ raw string constant NAME (a source file
# of another language, embedded at build time: runtime/retc_runtime.py,
# emit/torch/helpers.py).
file(READ ${IN} content)
get_filename_component(src ${IN} NAME)
file(WRITE ${OUT} "// Generated from ${src}; do not edit.\n#pragma once\nstatic const char ${NAME}[] = R\"retc_py(${content})retc_py\";\n")
